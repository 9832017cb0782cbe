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

    /** Bytes of the assembled shard. */
    public long byteSize() {
        return shape.volume() * dtype.itemSize();
    }

    /** True when the shard is assembled from several pieces (a merge). */
    public boolean isMerge() {
        return pieces.size() > 1;
    }
}
