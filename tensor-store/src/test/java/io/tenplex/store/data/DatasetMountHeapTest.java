package io.tenplex.store.data;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The heap a loaded mount keeps per local sample (its sample tables and view files), measured as
 * the used heap after garbage collection with the mount against without it.
 */
class DatasetMountHeapTest {
    private static final int SAMPLES = 200_000;
    /** What a local sample may cost in the heap, index and partition order included. */
    private static final long MAX_BYTES_PER_SAMPLE = 90;

    @TempDir
    Path tmp;

    @Test
    void aLoadedMount_keepsFewHeapBytesPerLocalSample() throws Exception {
        Path data = Files.write(tmp.resolve("data.bin"), new byte[SAMPLES]);
        StringBuilder index = new StringBuilder("1\n" + data.toAbsolutePath() + " " + SAMPLES + "\n");
        for (int i = 0; i < SAMPLES; i++) {
            index.append(i).append(' ').append(i + 1).append('\n');
        }
        var body = new ObjectMapper().createObjectNode().put("indexText", index.toString()).put("globalBatch", 1)
                .put("dpSize", 1).put("shuffle", false);
        index = null;
        try (TensorStore store = new TensorStore(new Allocator(64L << 20));
                DatasetService ds = new DatasetService(io.tenplex.store.peer.DaemonLink.plain(null), store.allocator(),
                        SourcePolicy.none().withDataRoots(List.of(tmp)))) {
            long before = usedHeap();
            ds.mount("j", body);
            assertTrue(ds.awaitLoaded("j", Duration.ofMinutes(2)), "the mount did not load in time");
            body = null;
            long perSample = (usedHeap() - before) / SAMPLES;
            System.out.println("heap per local sample of a loaded mount: " + perSample + " bytes");
            assertTrue(perSample <= MAX_BYTES_PER_SAMPLE, perSample + " heap bytes per local sample (expected: <= "
                    + MAX_BYTES_PER_SAMPLE + ")");
            ds.unmount("j");
        }
    }

    private static long usedHeap() {
        Runtime rt = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) { // the smallest of a few collections: what is really reachable
            System.gc();
            used = Math.min(used, rt.totalMemory() - rt.freeMemory());
        }
        return used;
    }
}
