package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Region;

/**
 * One piece of a destination shard: the region {@code source} of the source rank's shard
 * {@code sourceKey} (in that shard's own coordinates) goes to {@code destOffset} in the destination
 * shard. {@code global} is the same region in the tensor's global coordinates.
 * {@code replicas} lists every rank holding the same source region, so an executor can retry
 * elsewhere.
 */
public record Piece(Kind kind, int sourceRank, Device sourceDevice, String sourceKey, Region source, Region global,
        long[] destOffset, long bytes, int[] replicas) {

    /** What a piece costs, in the paper's words. */
    public enum Kind {
        /** The destination device already holds exactly this shard: nothing is copied. */
        KEEP("keep"),
        /** A sub-region of a shard on the same device is copied (split). */
        SPLIT("split"),
        /** Moved from another device of the same worker. */
        LOCAL("move"),
        /** Moved from another worker. */
        REMOTE("fetch");

        final String verb;

        Kind(String verb) {
            this.verb = verb;
        }
    }

    /** {@code replicas}: every rank holding the same source region, ascending (for retries); shared, not copied. */
    public Piece {
        destOffset = destOffset.clone();
    }

    /** Every rank holding this piece's source region, ascending (a copy). */
    @Override
    public int[] replicas() {
        return replicas.clone();
    }

    /** The offset in the destination shard (a copy: plans are immutable). */
    @Override
    public long[] destOffset() {
        return destOffset.clone();
    }

    /** Orders pieces by destination offset (row-major), without copying. */
    static int byDestination(Piece a, Piece b) {
        return java.util.Arrays.compare(a.destOffset, b.destOffset);
    }

    Piece withSource(Kind k, int rank, Device device) {
        return new Piece(k, rank, device, sourceKey, source, global, destOffset, bytes, replicas);
    }

    @Override
    public String toString() {
        StringBuilder off = new StringBuilder("[");
        for (int i = 0; i < destOffset.length; i++) {
            off.append(i > 0 ? "," : "").append(destOffset[i]);
        }
        return kind.verb + " rank " + sourceRank + " (" + sourceDevice + ") " + sourceKey + " [" + source + "] -> "
                + off + "]";
    }
}
