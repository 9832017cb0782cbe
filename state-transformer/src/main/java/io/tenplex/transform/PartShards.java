package io.tenplex.transform;

import java.util.List;
import java.util.Map;

/**
 * How a part's new shards divide before a run: those kept in place (a saved shard unchanged), those
 * with the bytes of another shard of the part (a data-parallel replica assembled once: the sink aliases
 * them) and those to assemble.
 */
final class PartShards {
    private PartShards() {
    }

    /** Whether {@code shard} is kept in place: one piece, the old shard unchanged. */
    static boolean isKeep(ShardPlan shard) {
        return shard.pieces().size() == 1 && shard.pieces().get(0).kind() == Piece.Kind.KEEP;
    }

    /**
     * The sizes of the new shards a run of {@code part} assembles, in the order it opens them, when its
     * sink aliases replicas (what it will {@link ShardSink#expect}): for taking their memory ahead of the run.
     */
    static long[] newShardSizes(List<ShardPlan> part) {
        List<ShardPlan> opened = new java.util.ArrayList<>();
        classify(part, true, new java.util.ArrayList<>(), opened);
        return opened.stream().mapToLong(ShardPlan::byteSize).toArray();
    }

    /**
     * Sorts a part's shards: those kept in place (returned), those with the content of one opened before
     * (added to {@code aliases} with that one, when {@code aliasing}) and those to open (added to {@code opened}).
     */
    static List<ShardPlan> classify(List<ShardPlan> part, boolean aliasing, List<ShardPlan[]> aliases,
            List<ShardPlan> opened) {
        List<ShardPlan> keeps = new java.util.ArrayList<>();
        Map<Object, ShardPlan> firsts = aliasing ? new java.util.HashMap<>() : null;
        for (ShardPlan shard : part) {
            if (isKeep(shard)) {
                keeps.add(shard);
                continue;
            }
            ShardPlan first = firsts == null || shard.pieces().isEmpty() ? null : firsts.putIfAbsent(content(shard), shard);
            if (first != null) { // the same bytes as a shard assembled for another rank of this part
                aliases.add(new ShardPlan[] {shard, first});
            } else {
                opened.add(shard);
            }
        }
        return keeps;
    }

    /**
     * What a new shard's bytes are made of: its tensor, key, shape and type, padding, and for each piece
     * the ranks that hold its source (its replicas), the region of their shard it is and where it goes.
     * Two shards with the same content have the same bytes: each piece is the same region of the same
     * source shard, which the plan reads from any of its replicas. (A piece's {@code global} region is
     * not used: a part decoded from the wire does not carry it.)
     */
    private static Object content(ShardPlan s) {
        List<Object> pieces = new java.util.ArrayList<>(s.pieces().size() * 3);
        for (Piece p : s.pieces()) {
            int[] holders = p.replicas();
            java.util.Arrays.sort(holders);
            pieces.add(java.util.Arrays.toString(holders));
            pieces.add(p.source());
            pieces.add(java.util.Arrays.toString(p.destOffset()));
        }
        return List.of(s.tensor(), s.key(), s.shape(), s.dtype().wireName(), s.padding(), pieces);
    }
}
