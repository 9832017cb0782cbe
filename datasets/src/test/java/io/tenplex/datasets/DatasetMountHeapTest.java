package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.data.MountParams;
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
    private static final int SAMPLES = 400_000; // many, so that the heap noise of other threads is small per sample
    /** What a local sample may cost in the heap, index and partition order included. */
    private static final long MAX_BYTES_PER_SAMPLE = 90;

    @TempDir
    Path tmp;

    @Test
    void aLoadedMount_keepsFewHeapBytesPerLocalSample_andNoMoreThanItReserved() throws Exception {
        long perSample = measure(SAMPLES, 1024);
        assertTrue(perSample <= MAX_BYTES_PER_SAMPLE, perSample + " heap bytes per local sample (expected: <= "
                + MAX_BYTES_PER_SAMPLE + ")");
    }

    @Test
    void aMountWithAShardFilePerSample_keepsNoMoreThanItReserved() throws Exception {
        measure(20_000, 1);
    }

    /** Mounts {@code samples} one-byte samples, checks the heap kept against the reservation; bytes per sample. */
    private long measure(int samples, int samplesPerFile) throws Exception {
        Path data = Files.write(tmp.resolve("data.bin"), new byte[samples]);
        StringBuilder index = new StringBuilder("1\n" + data.toAbsolutePath() + " " + samples + "\n");
        for (int i = 0; i < samples; i++) {
            index.append(i).append(' ').append(i + 1).append('\n');
        }
        var body = MountRequest.inline(index.toString(), new MountParams(0, 1, 1, 0, false, samplesPerFile));
        index = null;
        try (TensorStore store = new TensorStore(new Allocator(64L << 20));
                DatasetService ds = new DatasetService(store.allocator(), SourcePolicy.none().withDataRoots(List.of(tmp)),
                        ShardPeers.NONE, DatasetExecutors.standard())) {
            long before = usedHeap();
            ds.mount("j", body);
            assertTrue(ds.awaitLoaded("j", Duration.ofMinutes(2)), "the mount did not load in time");
            body = null;
            long kept = usedHeap() - before;
            System.out.println("heap per local sample of a loaded mount (" + samplesPerFile + " per file): "
                    + kept / samples + " bytes, reserved " + ds.heapReserved() / samples);
            assertTrue(kept <= ds.heapReserved(), "the mount keeps " + kept + " heap bytes but reserved "
                    + ds.heapReserved());
            ds.unmount("j");
            assertEquals(0, ds.heapReserved());
            return kept / samples;
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
