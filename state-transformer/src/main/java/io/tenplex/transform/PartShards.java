package io.tenplex.transform;

import java.util.List;
import java.util.Map;

/**
 * How a part's new shards divide before a run: those kept in place (a saved shard unchanged), those
 * with the bytes of another shard of the part (a data-parallel replica assembled once, or a whole copy of
 * a kept shard: the sink aliases them) and those to assemble.
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
        Map<String, ShardPlan> kept = new java.util.HashMap<>(); // by source key and rank
        for (ShardPlan shard : part) {
            if (shard.pieces().size() == 1 && shard.pieces().get(0).kind() == Piece.Kind.KEEP) {
                keeps.add(shard);
                kept.put(shard.pieces().get(0).sourceKey() + "@" + shard.pieces().get(0).sourceRank(), shard);
            }
        }
        for (ShardPlan shard : part) {
            if (shard.pieces().size() == 1 && shard.pieces().get(0).kind() == Piece.Kind.KEEP) {
                continue;
            }
            ShardPlan keep = aliasing ? keptCopy(shard, kept) : null;
            if (keep != null) { // a whole copy of a shard this part keeps: the bytes of the kept one
                aliases.add(new ShardPlan[] {shard, keep});
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
     * The kept shard of {@code kept} whose bytes {@code shard} copies whole, or null: one piece of all
     * its bytes (no padding) from a source shard that the part keeps for another rank (held by one of
     * the piece's replicas, with the same shape and type: so the whole of it).
     */
    private static ShardPlan keptCopy(ShardPlan shard, Map<String, ShardPlan> kept) {
        if (kept.isEmpty() || shard.pieces().size() != 1 || !shard.padding().isEmpty()) {
            return null;
        }
        Piece p = shard.pieces().get(0);
        if (p.bytes() != shard.byteSize()) {
            return null;
        }
        for (int holder : p.replicas()) {
            ShardPlan k = kept.get(p.sourceKey() + "@" + holder);
            if (k != null && k.shape().equals(shard.shape()) && k.dtype() == shard.dtype()
                    && k.pieces().get(0).bytes() == p.bytes()) {
                return k;
            }
        }
        return null;
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
