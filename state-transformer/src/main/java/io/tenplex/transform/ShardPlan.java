package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Shape;
import java.util.List;

/**
 * How one destination shard is assembled: pieces in ascending destination order (so merges
 * concatenate in ascending source order) and the padding regions (zero) that complete it.
 */
public record ShardPlan(int destRank, Device destDevice, String tensor, String key, Shape shape,
        io.tenplex.ptc.DType dtype, List<Piece> pieces, List<io.tenplex.ptc.Region> padding) {

    /** @throws IllegalArgumentException a shard of more than 2^63 bytes (a shape and dtype from the wire) */
    public ShardPlan {
        try {
            Math.multiplyExact(shape.volume(), (long) dtype.itemSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("shard " + key + " of rank " + destRank + ": " + dtype.wireName() + shape
                    + " has more than 2^63 bytes");
        }
    }

    /** Bytes of the assembled shard. */
    public long byteSize() {
        return shape.volume() * dtype.itemSize();
    }

    /** True when the shard is assembled from several pieces (a merge). */
    public boolean isMerge() {
        return pieces.size() > 1;
    }
}
