package io.tenplex.transform;

import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.TensorSpec;
import java.util.List;
import java.util.Optional;

/**
 * What every destination shard of one tensor cut the same way shares, whichever rank holds it: its
 * region, the old cells it is made of (ascending, so their pieces are in destination order), each
 * piece's region and bytes, whether one old cell equals it exactly (so a device holding that cell
 * keeps it in place), and its padding. Computed once per (tensor, new cell), not once per shard.
 */
final class ShardGeometry {
    /** The destination shard's region (stored coordinates of the new configuration). */
    final Region region;
    /** The old cells that overlap its real (unpadded) part, in ascending order. */
    final int[] cells;
    /** Per cell of {@link #cells}: the overlap in global coordinates. */
    final Region[] global;
    /** Per cell of {@link #cells}: the overlap's bytes. */
    final long[] bytes;
    /** The old cell equal to the whole shard (padding included), or -1. */
    final int keepCell;
    /** The shard's bytes. */
    final long shardBytes;
    /** The part beyond the logical tensor, in shard coordinates (for shards not kept in place). */
    final List<Region> padding;

    /**
     * @param from the old configuration
     * @param source the old tensor the shard is made of
     * @param region the destination shard's region
     */
    ShardGeometry(Ptc from, TensorSpec source, Region region) {
        this.region = region;
        int item = source.dtype().itemSize();
        this.shardBytes = region.volume() * item;
        int[] all = Planner.overlappingCells(from, source, region);
        this.keepCell = all.length == 1 && from.cell(source, all[0]).equals(region) ? all[0] : -1;
        Region logical = Region.whole(source.shape());
        Optional<Region> real = region.intersect(logical);
        int[] found = new int[0];
        Region[] overlaps = new Region[0];
        if (real.isPresent()) {
            int[] cand = Planner.overlappingCells(from, source, real.get());
            found = new int[cand.length];
            overlaps = new Region[cand.length];
            int n = 0;
            for (int cell : cand) {
                Optional<Region> g = from.cell(source, cell).intersect(real.get());
                if (g.isPresent() && !g.get().isEmpty()) {
                    found[n] = cell;
                    overlaps[n++] = g.get();
                }
            }
            found = java.util.Arrays.copyOf(found, n);
            overlaps = java.util.Arrays.copyOf(overlaps, n);
        }
        this.cells = found;
        this.global = overlaps;
        this.bytes = new long[found.length];
        for (int i = 0; i < found.length; i++) {
            bytes[i] = overlaps[i].volume() * item;
        }
        this.padding = Planner.padding(region, logical);
    }
}
