package io.tenplex.ptc.data;

import java.util.Arrays;

/**
 * The partition of a dataset after a mount: which samples form each remaining global batch of the
 * current epoch, and which of them each data-parallel rank reads, in which shard file.
 *
 * <p>An epoch consumes {@code E = floor(n / G) * G} samples (an incomplete last batch is dropped).
 * Progress {@code P} is in epoch {@code P / E} at position {@code p = P mod E}; that epoch's order is
 * {@link SampleOrder#of}{@code (n, seed, epoch, shuffle)}. Global batch {@code b} after the mount is
 * {@code order[p + b*G, p + (b+1)*G)} for {@code b < (E - p) / G}. With {@code k = ceil(G / N)}, rank
 * {@code r} takes positions {@code [min(r*k, G), min((r+1)*k, G))} of every global batch. A rank's
 * samples, batch after batch, are cut into shard files of {@code M} samples (the last may be shorter;
 * a rank without samples has no shard file).
 */
public final class DataPartition {
    private final MountParams params;
    private final int[] order;
    private final int epoch;
    private final int start;
    private final int batches;
    private final int dropped;

    public DataPartition(int samples, MountParams params) {
        this.params = params;
        int g = params.globalBatch();
        long perEpoch = (long) (samples / g) * g;
        if (perEpoch == 0) {
            throw new IllegalArgumentException("dataset of " + samples + " samples has no complete global batch of " + g);
        }
        long epochs = params.progress() / perEpoch;
        if (epochs > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("progress " + params.progress() + " is " + epochs + " epochs of "
                    + perEpoch + " samples, over the limit of " + Integer.MAX_VALUE + " epochs");
        }
        this.epoch = (int) epochs;
        this.start = (int) (params.progress() % perEpoch);
        this.order = SampleOrder.of(samples, params.seed(), epoch, params.shuffle());
        this.batches = (int) ((perEpoch - start) / g);
        this.dropped = (int) (samples - perEpoch);
    }

    public MountParams params() {
        return params;
    }

    public int epoch() {
        return epoch;
    }

    /** Global batches left in this epoch after the mount. */
    public int batches() {
        return batches;
    }

    /** Samples of each epoch that fall in the incomplete last batch and are never read. */
    public int dropped() {
        return dropped;
    }

    /** The samples of global batch {@code b} (0 = the first after the mount), in order. */
    public int[] globalBatch(int b) {
        checkBatch(b);
        int from = start + b * params.globalBatch();
        return Arrays.copyOfRange(order, from, from + params.globalBatch());
    }

    /** Samples rank {@code r} reads from each global batch. */
    public int localBatch(int rank) {
        checkRank(rank);
        int k = params.rankSlice();
        int g = params.globalBatch();
        return Math.min((rank + 1) * k, g) - Math.min(rank * k, g);
    }

    /** Every sample rank {@code r} reads, batch after batch. */
    public int[] rankSamples(int rank) {
        int local = localBatch(rank);
        int lo = Math.min(rank * params.rankSlice(), params.globalBatch());
        int[] out = new int[local * batches];
        for (int b = 0; b < batches; b++) {
            System.arraycopy(order, start + b * params.globalBatch() + lo, out, b * local, local);
        }
        return out;
    }

    /** Number of shard files of rank {@code r}. */
    public int shardFiles(int rank) {
        long n = (long) localBatch(rank) * batches;
        return (int) ((n + params.samplesPerFile() - 1) / params.samplesPerFile());
    }

    /** The samples of shard file {@code f} of rank {@code r}, given that rank's {@link #rankSamples}. */
    public int[] shardSamples(int[] rankSamples, int f) {
        int m = params.samplesPerFile();
        if (f < 0 || (long) f * m >= rankSamples.length) {
            throw new IndexOutOfBoundsException("shard file " + f + " out of range");
        }
        return Arrays.copyOfRange(rankSamples, f * m, Math.min((f + 1) * m, rankSamples.length));
    }

    private void checkBatch(int b) {
        if (b < 0 || b >= batches) {
            throw new IndexOutOfBoundsException("global batch " + b + " (expected: 0 <= b < " + batches + ")");
        }
    }

    private void checkRank(int rank) {
        if (rank < 0 || rank >= params.dpSize()) {
            throw new IndexOutOfBoundsException("rank " + rank + " (expected: 0 <= rank < " + params.dpSize() + ")");
        }
    }
}
