package io.tenplex.ptc.data;

/**
 * What a dataset mount is for: the progress {@code P} (samples consumed since the start of
 * training, a multiple of the global batch), the global batch {@code G}, the data-parallel size
 * {@code N}, the order's seed, whether to shuffle, and the samples per shard file {@code M}.
 */
public record MountParams(long progress, int globalBatch, int dpSize, long seed, boolean shuffle, int samplesPerFile) {
    public MountParams {
        if (progress < 0) {
            throw new IllegalArgumentException("progress " + progress + " (expected: >= 0)");
        }
        if (globalBatch < 1) {
            throw new IllegalArgumentException("global batch " + globalBatch + " (expected: >= 1)");
        }
        if (dpSize < 1) {
            throw new IllegalArgumentException("data-parallel size " + dpSize + " (expected: >= 1)");
        }
        if (samplesPerFile < 1) {
            throw new IllegalArgumentException("samples per file " + samplesPerFile + " (expected: >= 1)");
        }
        if (progress % globalBatch != 0) {
            throw new IllegalArgumentException("progress " + progress + " is not a multiple of the global batch "
                    + globalBatch + " (progress = step x global batch)");
        }
    }

    /** Samples each rank takes from a global batch, except that the last ranks may take fewer. */
    public int rankSlice() {
        return (globalBatch + dpSize - 1) / dpSize;
    }
}
