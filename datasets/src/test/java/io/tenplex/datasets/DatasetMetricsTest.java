package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.client.CollectorRegistry;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A mount, its loading and its unmount are counted, and so are the samples by where they came from. */
class DatasetMetricsTest {
    @TempDir
    Path tmp;

    private static double value(String name, String label, String value) {
        Double v = CollectorRegistry.defaultRegistry.getSampleValue(name, new String[] {label}, new String[] {value});
        return v == null ? 0 : v;
    }

    @Test
    void mountLoadAndUnmount_areCounted_samplesBySource() throws Exception {
        int samples = 40;
        Path data = Files.write(tmp.resolve("data.bin"), new byte[samples * 4]);
        StringBuilder index = new StringBuilder("1\n" + data.toAbsolutePath() + " " + samples + "\n");
        for (int i = 0; i < samples; i++) {
            index.append(i * 4).append(' ').append(i * 4 + 4).append('\n');
        }
        double mounted = value("tenplex_dataset_mounts_total", "event", "mounted");
        double loaded = value("tenplex_dataset_mounts_total", "event", "loaded");
        double unmounted = value("tenplex_dataset_mounts_total", "event", "unmounted");
        double fromSource = value("tenplex_dataset_samples_loaded_total", "source", "source");
        try (TensorStore store = new TensorStore(new Allocator(16L << 20));
                DatasetService ds = new DatasetService(store.allocator(), SourcePolicy.none().withDataRoots(List.of(tmp)),
                        ShardPeers.NONE, DatasetExecutors.standard())) {
            ds.mount("j", MountRequest.inline(index.toString(), new MountParams(0, 4, 1, 0, false, 8)));
            assertTrue(ds.awaitLoaded("j", Duration.ofMinutes(1)), "the mount did not load in time");
            ds.unmount("j");
        }
        assertEquals(mounted + 1, value("tenplex_dataset_mounts_total", "event", "mounted"));
        assertEquals(loaded + 1, value("tenplex_dataset_mounts_total", "event", "loaded"));
        assertEquals(unmounted + 1, value("tenplex_dataset_mounts_total", "event", "unmounted"));
        assertEquals(fromSource + samples, value("tenplex_dataset_samples_loaded_total", "source", "source"));
    }
}
