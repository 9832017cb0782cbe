package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.IndexRange;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.ptc.ValueSpec;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.TreeSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The planner as it was before {@link PlanBuilder}: objects per piece, a tree set of loads per
 * holder set. Kept as the oracle of {@link PlannerEquivalenceTest}: the table planner must make
 * exactly its choices.
 *
 * <p>Computes the plan that turns the state held under one PTC into the state under another.
 *
 * <p>For every destination shard, the source cells (the distinct regions of the old partitioning)
 * that overlap it give its pieces. Each piece is taken from the destination device itself when it
 * holds it, else from another device of the same worker, else from a remote worker; remote pieces
 * are assigned largest first to the replica whose worker has sent the least so far, so that the
 * most loaded sender sends as little as possible. A destination shard that its device already holds
 * exactly is kept in place. Vocabulary rows beyond the real vocabulary are padding (zero).
 */
final class LegacyPlanner {
    private LegacyPlanner() {
    }

    public static Plan plan(Ptc from, Ptc to) {
        checkSameModel(from, to);
        List<Draft> drafts = new ArrayList<>();
        List<Pending> remote = new ArrayList<>();
        for (int rank = 0; rank < to.worldSize(); rank++) {
            Device dest = to.device(rank);
            for (Ptc.Shard shard : to.shards(rank)) {
                drafts.add(draft(from, to, rank, dest, shard, drafts.size(), remote));
            }
        }
        long lowerBound = remote.stream().mapToLong(r -> r.piece().bytes()).sum();
        balanceRemote(from, drafts, remote);
        List<ShardPlan> shards = new ArrayList<>(drafts.size());
        for (Draft d : drafts) {
            d.pieces().sort(Piece::byDestination);
            shards.add(new ShardPlan(d.rank(), d.dest(), d.tensor(), d.shard().key(), d.shard().shape(),
                    d.shard().spec().dtype(), List.copyOf(d.pieces()), d.padding()));
        }
        return new Plan(from.config(), to.config(), shards, values(from, to), report(shards, lowerBound), from.devices(),
                to.devices(), java.util.Set.of());
    }

    /**
     * The pieces of one destination shard (the {@code index}-th): kept in place, or one piece per
     * overlapping source cell, sourced on the same device or worker when possible; pieces that must
     * come from another worker are added to {@code remote} for balancing.
     */
    private static Draft draft(Ptc from, Ptc to, int rank, Device dest, Ptc.Shard shard, int index,
            List<Pending> remote) {
        TensorSpec t = source(from, to, shard.spec().name());
        List<Piece> pieces = new ArrayList<>();
        Region logical = Region.whole(t.shape());
        Piece keep = keptInPlace(from, t, shard.region(), dest);
        if (keep != null) {
            pieces.add(keep);
            return new Draft(rank, dest, shard.spec().name(), shard, pieces, List.of());
        }
        Optional<Region> real = shard.region().intersect(logical);
        if (real.isPresent()) {
            for (int cell : overlappingCells(from, t, real.get())) {
                Region c = from.cell(t, cell);
                Optional<Region> g = c.intersect(real.get());
                if (g.isEmpty() || g.get().isEmpty()) {
                    continue;
                }
                int[] holders = from.holders(t, cell);
                Piece p = nearSource(from, t, cell, dest, piece(from, t, c, g.get(), shard.region(), holders));
                if (p == null) {
                    p = piece(from, t, c, g.get(), shard.region(), holders);
                    remote.add(new Pending(index, pieces.size(), p, holders, from.holderSet(t, cell)));
                }
                pieces.add(p);
            }
        }
        return new Draft(rank, dest, shard.spec().name(), shard, pieces, padding(shard.region(), logical));
    }

    /** The piece sourced on the destination's own device, else on its worker; null when only another worker holds it. */
    private static Piece nearSource(Ptc from, TensorSpec t, int cell, Device dest, Piece p) {
        int sameDevice = from.rankOn(dest);
        if (sameDevice >= 0 && from.holds(sameDevice, t, cell)) {
            return p.withSource(Piece.Kind.SPLIT, sameDevice, dest);
        }
        for (int r : from.ranksOnWorker(dest.worker())) {
            if (from.holds(r, t, cell)) {
                return p.withSource(Piece.Kind.LOCAL, r, from.device(r));
            }
        }
        return null;
    }

    /** A destination shard while its pieces are chosen. */
    private record Draft(int rank, Device dest, String tensor, Ptc.Shard shard, List<Piece> pieces,
            List<Region> padding) {}

    /**
     * The whole shard as one kept piece when the destination device already holds exactly this
     * region of the tensor (padding included), else null.
     */
    private static Piece keptInPlace(Ptc from, TensorSpec t, Region shard, Device dest) {
        int[] cells = overlappingCells(from, t, shard);
        if (cells.length != 1 || !from.cell(t, cells[0]).equals(shard)) {
            return null;
        }
        int h = from.rankOn(dest);
        if (h < 0 || !from.holds(h, t, cells[0])) {
            return null;
        }
        return new Piece(Piece.Kind.KEEP, h, dest, sourceKey(from, t), Region.whole(shard.shape()), shard,
                new long[shard.rank()], shard.volume() * t.dtype().itemSize(), from.holders(t, cells[0]));
    }

    /** A remote piece waiting for its replica choice: piece {@code index} of draft {@code shard}. */
    private record Pending(int shard, int index, Piece piece, int[] holders, long holderSet) {}

    private static Piece piece(Ptc from, TensorSpec t, Region cell, Region global, Region dest, int[] holders) {
        int rank = holders[0];
        long[] neg = negate(cell.offset());
        long[] destOffset = global.offset();
        long[] d0 = dest.offset();
        for (int i = 0; i < destOffset.length; i++) {
            destOffset[i] -= d0[i];
        }
        return new Piece(Piece.Kind.REMOTE, rank, from.device(rank), sourceKey(from, t), global.shift(neg), global,
                destOffset, global.volume() * t.dtype().itemSize(), holders);
    }

    /** The key of the tensor on its stage of the old configuration (the same for all its holders). */
    private static String sourceKey(Ptc from, TensorSpec t) {
        return from.key(t);
    }

    private static long[] negate(long[] v) {
        long[] n = new long[v.length];
        for (int i = 0; i < v.length; i++) {
            n[i] = -v[i];
        }
        return n;
    }

    /** The cells of the old partitioning that can overlap {@code r}, computed, not searched. */
    private static int[] overlappingCells(Ptc from, TensorSpec t, Region r) {
        int cells = from.cells(t);
        if (cells == 1) {
            return new int[] {0};
        }
        int dim = Partition.splitDim(t.partition());
        long part = from.storedShape(t).dim(dim) / cells;
        IndexRange along = r.range(dim);
        if (part == 0 || along.isEmpty() || along.start() >= part * cells) {
            return new int[0];
        }
        int first = (int) (along.start() / part);
        int last = (int) Math.min(cells - 1, (along.stop() - 1) / part);
        int[] out = new int[last - first + 1];
        for (int i = 0; i < out.length; i++) {
            out[i] = first + i;
        }
        return out;
    }

    /** The part of a destination shard beyond the logical tensor (vocabulary padding), in shard coordinates. */
    private static List<Region> padding(Region shard, Region logical) {
        for (int d = 0; d < shard.rank(); d++) {
            long realStop = logical.range(d).stop();
            IndexRange r = shard.range(d);
            if (r.stop() > realStop) {
                long from = Math.max(r.start(), realStop);
                Region pad = shard.with(d, IndexRange.of(from, r.stop()));
                return List.of(pad.shift(negate(shard.offset())));
            }
        }
        return List.of();
    }

    /**
     * Largest remote pieces first, each to the replica whose worker has sent least so far. Pieces
     * of tensors cut the same way share a holder set; each set keeps its workers ordered by load, and
     * a worker's new load is re-filed in every set it belongs to, so a choice costs O(log D).
     */
    private static void balanceRemote(Ptc from, List<Draft> drafts, List<Pending> remote) {
        remote.sort(Comparator.comparingLong((Pending p) -> -p.piece().bytes()).thenComparingInt(Pending::shard)
                .thenComparingInt(Pending::index));
        Map<Long, HolderSet> sets = new HashMap<>();
        Map<Integer, List<HolderSet>> setsOfWorker = new HashMap<>();
        Map<Integer, Long> sent = new HashMap<>();
        for (Pending p : remote) {
            HolderSet set = sets.computeIfAbsent(p.holderSet(), k -> {
                HolderSet hs = new HolderSet(from, p.holders());
                for (int w : hs.firstRankOnWorker.keySet()) {
                    setsOfWorker.computeIfAbsent(w, x -> new ArrayList<>()).add(hs);
                    hs.byLoad.add(new long[] {sent.getOrDefault(w, 0L), w});
                }
                return hs;
            });
            long[] least = set.byLoad.first();
            int worker = (int) least[1];
            int best = set.firstRankOnWorker.get(worker);
            long before = least[0];
            long after = before + p.piece().bytes();
            sent.put(worker, after);
            for (HolderSet hs : setsOfWorker.get(worker)) {
                hs.byLoad.remove(new long[] {before, worker});
                hs.byLoad.add(new long[] {after, worker});
            }
            drafts.get(p.shard()).pieces().set(p.index(), p.piece().withSource(Piece.Kind.REMOTE, best,
                    from.device(best)));
        }
    }

    /** The workers holding one cell, ordered by what they have sent so far (ties: lowest worker). */
    private static final class HolderSet {
        final Map<Integer, Integer> firstRankOnWorker = new TreeMap<>();
        final TreeSet<long[]> byLoad = new TreeSet<>((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0])
                : Long.compare(a[1], b[1]));

        HolderSet(Ptc from, int[] holders) {
            for (int h : holders) {
                firstRankOnWorker.putIfAbsent(from.device(h).worker(), h);
            }
        }
    }

    private static List<ValueCopy> values(Ptc from, Ptc to) {
        List<ValueCopy> out = new ArrayList<>();
        for (int rank = 0; rank < to.worldSize(); rank++) {
            RankLayout.Coord c = to.layout().coord(rank, to.config());
            for (ValueSpec v : to.model().values()) {
                int src = from.valueSource(v, c.tp(), c.dp(), c.pp());
                out.add(new ValueCopy(rank, v.key(), src, from.device(src)));
            }
        }
        return out;
    }

    private static PlanReport report(List<ShardPlan> shards, long lowerBound) {
        long onDevice = 0;
        long intra = 0;
        long inter = 0;
        long kept = 0;
        Map<Integer, Long> sent = new TreeMap<>();
        Map<Integer, Long> received = new TreeMap<>();
        for (ShardPlan s : shards) {
            for (Piece p : s.pieces()) {
                switch (p.kind()) {
                    case KEEP -> kept += p.bytes();
                    case SPLIT -> onDevice += p.bytes();
                    case LOCAL -> intra += p.bytes();
                    case REMOTE -> {
                        inter += p.bytes();
                        sent.merge(p.sourceDevice().worker(), p.bytes(), Long::sum);
                        received.merge(s.destDevice().worker(), p.bytes(), Long::sum);
                    }
                }
            }
        }
        return new PlanReport(onDevice, intra, inter, lowerBound, kept, Map.copyOf(sent), Map.copyOf(received));
    }

    /** The old tensor a new one is made from: itself, or the original of a tied copy the old model lacks. */
    private static TensorSpec source(Ptc from, Ptc to, String name) {
        if (from.model().has(name)) {
            return from.model().tensor(name);
        }
        String tie = to.model().tiedTo(name);
        if (tie != null && from.model().has(tie)) {
            return from.model().tensor(tie);
        }
        throw new IllegalArgumentException("tensor " + name + " of the new configuration has no source in the old one");
    }

    private static void checkSameModel(Ptc from, Ptc to) {
        for (TensorSpec t : to.model().tensors()) {
            TensorSpec s = source(from, to, t.name());
            if (!s.shape().equals(t.shape()) || s.dtype() != t.dtype() || !s.partition().equals(t.partition())) {
                throw new IllegalArgumentException("tensor " + t.name() + " is " + s.dtype().wireName() + s.shape() + " "
                        + s.partition() + " in the old model but " + t.dtype().wireName() + t.shape() + " "
                        + t.partition() + " in the new one");
            }
        }
    }
}
