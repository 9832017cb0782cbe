package io.tenplex.datasets.hdf5;

import io.jhdf.api.dataset.ChunkedDataset;
import io.jhdf.exceptions.HdfException;

/**
 * The stored (encoded) sizes of a block's chunks, checked from the chunk index before jHDF copies a
 * chunk into the heap to decode it: a chunk record that claims more than any encoder writes for a
 * chunk of the declared size (its size, plus a quarter and 64 KiB for what compression adds to bytes
 * it cannot shrink) is refused with {@link ChunkLimit.Exceeded}. The chunk's bytes are only mapped
 * here, never read.
 */
final class StoredChunks {
    private StoredChunks() {
    }

    /** The most bytes a stored chunk of {@code chunkBytes} declared bytes may take. */
    static long limit(long chunkBytes) {
        return chunkBytes + chunkBytes / 4 + (64 << 10);
    }

    /**
     * Checks the stored chunks that hold rows {@code [first, first + n)} of {@code ds} (chunks
     * never written are skipped).
     */
    static void check(ChunkedDataset ds, long chunkBytes, long first, int n) {
        long[] dims = ds.getDimensionsAsLong();
        int[] chunk = ds.getChunkDimensions();
        int[] at = new int[dims.length];
        long limit = limit(chunkBytes);
        for (long r = first / chunk[0] * chunk[0]; r < first + n; r += chunk[0]) {
            at[0] = (int) r;
            do {
                long stored = stored(ds, at);
                if (stored > limit) {
                    throw new ChunkLimit.Exceeded("chunk " + java.util.Arrays.toString(at) + " is stored in " + stored
                            + " bytes, over the " + limit + " a chunk of " + chunkBytes + " bytes may take (refused: a"
                            + " corrupt or hostile file)");
                }
            } while (nextInner(at, dims, chunk));
        }
    }

    private static long stored(ChunkedDataset ds, int[] at) {
        try {
            return ds.getRawChunkBuffer(at).remaining();
        } catch (HdfException e) {
            return 0; // never written (or beyond the file: its decode fails on its own)
        }
    }

    /** Steps the inner chunk coordinates; false when they wrap around to 0. */
    private static boolean nextInner(int[] at, long[] dims, int[] chunk) {
        for (int d = dims.length - 1; d > 0; d--) {
            at[d] += chunk[d];
            if (at[d] < dims[d]) {
                return true;
            }
            at[d] = 0;
        }
        return false;
    }
}
