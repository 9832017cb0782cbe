package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.TensorSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The choices of a change that every daemon makes alike, without listing its pieces: which holder
 * serves each remote read, and so what every worker sends and receives.
 *
 * <p>The unit is a <em>pair</em>: one cell of a new tensor (the shard all its new holders need) and
 * one old cell it overlaps. The ranks that need the pair, and whether each reads it on its device,
 * on its worker or from another worker, depend only on the two holder sets, so they are classified
 * once per combination of sets ({@link CellReads}), not once per rank. A destination worker whose
 * ranks read a pair remotely is one <em>unit</em>: its ranks share one fetch (the move assembles a
 * replicated shard once per worker), so a unit counts its bytes once. Pairs are visited largest
 * first (ties by holder set, combination and enumeration order, so every daemon visits them in the
 * same order); a run of equal pairs deals its units round robin over the pair's holding workers,
 * least loaded first. Within a holder set the busiest sender then sends at most one pair's bytes
 * more than the least busy. The work is O(pairs x (holders + units)): the number of tensors and
 * cells, times the data-parallel degree, not the number of pieces (which multiplies all three).
 */
final class PairBalance {
    /** How the new holders of one cell read one old cell: counts by kind, and the remote units. */
    static final class CellReads {
        final int id;
        final long splitRanks;
        final long localRanks;
        final long remoteRanks;
        /** The dense destination workers reading it remotely, ascending. */
        final int[] units;

        CellReads(int id, long split, long local, long remote, int[] units) {
            this.id = id;
            this.splitRanks = split;
            this.localRanks = local;
            this.remoteRanks = remote;
            this.units = units;
        }
    }

    private record ReadsKey(int[] dest, HolderIndex keep, HolderIndex cell) {}

    private record KeepKey(int[] dest, HolderIndex keep) {}

    final Ptc from;
    final Ptc to;
    final int[] sourceOf;
    final ShardGeometry[][] geometry;
    final int[] workerIds;
    final int[] workerOfRank;
    final int copySpare;
    final int[] destWorkerIds;
    /** Per new rank: the old rank on its device, or -1. */
    final int[] sameDevice;
    /** Per new rank: its worker as a dense source worker, or -1 when that worker holds no old rank. */
    final int[] destAsSource;
    /** Per new tensor and new cell: the index of its first pair, or -1 when no rank holds the cell. */
    final int[][] pairStart;
    final long[] sent;
    final long[] received;
    long onDevice;
    long intra;
    long inter;
    long kept;

    private final int[][] copyWorkers;
    private final int[] destIndex;
    private final HolderIndexes holderIndex;
    private final Map<HolderIndex, Integer> setIds = new IdentityHashMap<>();
    private final Map<ReadsKey, CellReads> reads = new HashMap<>();
    private final Map<KeepKey, Long> keptRanks = new HashMap<>();
    private final List<CellReads> pairReads = new ArrayList<>();
    private final List<HolderIndex> pairHolders = new ArrayList<>();
    private long[] pairBytes = new long[1024];

    /** @param copies per old rank, the other workers keeping a complete copy of its tree */
    PairBalance(Ptc from, Ptc to, Map<Integer, List<Integer>> copies) {
        this.from = from;
        this.to = to;
        List<TensorSpec> toTensors = to.model().tensors();
        this.sourceOf = Planner.sourceOf(from, to);
        this.geometry = new ShardGeometry[toTensors.size()][];
        this.pairStart = new int[toTensors.size()][];
        for (int i = 0; i < toTensors.size(); i++) {
            geometry[i] = new ShardGeometry[to.cells(toTensors.get(i))];
            pairStart[i] = new int[geometry[i].length];
        }
        SourceWorkers sources = SourceWorkers.of(from, copies);
        HolderIndex.checkSize(from, sources.ids().length); // a definition from another daemon: bounded before planning
        this.workerIds = sources.ids();
        this.workerOfRank = sources.ofRank();
        this.copyWorkers = sources.copies();
        this.copySpare = sources.copySpare();
        this.destWorkerIds = to.devices().stream().mapToInt(Device::worker).distinct().sorted().toArray();
        this.sameDevice = new int[to.worldSize()];
        this.destAsSource = new int[to.worldSize()];
        this.destIndex = new int[to.worldSize()];
        for (int r = 0; r < to.worldSize(); r++) {
            Device d = to.device(r);
            sameDevice[r] = from.rankOn(d);
            int w = Arrays.binarySearch(workerIds, d.worker());
            destAsSource[r] = w < 0 ? -1 : w;
            destIndex[r] = Arrays.binarySearch(destWorkerIds, d.worker());
        }
        this.sent = new long[workerIds.length];
        this.received = new long[destWorkerIds.length];
        this.holderIndex = new HolderIndexes(from, ranks -> {
            HolderIndex made = new HolderIndex(ranks, workerOfRank, copyWorkers, sent.length, ws -> null);
            setIds.put(made, setIds.size());
            return made;
        });
    }

    /**
     * Classifies every pair and deals the remote units.
     *
     * @param ownWorker the worker whose units' holders are wanted
     * @return per pair, the dense source worker chosen to serve {@code ownWorker}'s unit, or -1
     */
    int[] run(int ownWorker) {
        enumerate();
        int own = Arrays.binarySearch(destWorkerIds, ownWorker);
        int[] chosen = new int[pairReads.size()];
        Arrays.fill(chosen, -1);
        Integer[] order = remoteOrder();
        List<int[]> runs = new ArrayList<>();
        List<long[]> counts = new ArrayList<>();
        int at = 0;
        while (at < order.length) {
            int end = at + 1;
            while (end < order.length && sameRun(order[at], order[end])) {
                end++;
            }
            runs.add(new int[] {at, end});
            counts.add(deal(order, at, end));
            at = end;
        }
        refine(order, runs, counts);
        for (int r = 0; r < runs.size(); r++) {
            choose(order, runs.get(r)[0], runs.get(r)[1], counts.get(r), own, chosen);
        }
        digest = digest(order, runs, counts);
        return chosen;
    }

    /** The digest of the whole change's choices (after {@link #run}): equal on every daemon that planned it alike. */
    String digest() {
        return digest;
    }

    private String digest;

    /**
     * Hashes what every daemon must agree on: the planner's version, both placements, every pair (its
     * bytes and how its ranks read it), the deal (each run's pairs and what each holder serves) and the
     * resulting loads. A daemon that read the change differently (a version skew, a bug) gets another.
     */
    private String digest(Integer[] order, List<int[]> runs, List<long[]> counts) {
        PlanDigest d = new PlanDigest("tenplex local plan v1 " + from.config() + " -> " + to.config());
        from.devices().forEach(x -> d.add(x.worker()).add(x.local()));
        to.devices().forEach(x -> d.add(x.worker()).add(x.local()));
        for (int i = 0; i < pairReads.size(); i++) {
            CellReads cr = pairReads.get(i);
            d.add(pairBytes[i]).add(setIds.get(pairHolders.get(i))).add(cr.splitRanks).add(cr.localRanks)
                    .add(cr.remoteRanks).add(cr.units.length);
        }
        for (int r = 0; r < runs.size(); r++) {
            d.add(order[runs.get(r)[0]]).add(runs.get(r)[1] - runs.get(r)[0]);
            for (long c : counts.get(r)) {
                d.add(c);
            }
        }
        for (long x : sent) {
            d.add(x);
        }
        for (long x : received) {
            d.add(x);
        }
        return d.add(onDevice).add(intra).add(inter).add(kept).hex();
    }

    private void enumerate() {
        List<TensorSpec> toTensors = to.model().tensors();
        for (int t = 0; t < toTensors.size(); t++) {
            TensorSpec tt = toTensors.get(t);
            int f = sourceOf[t];
            TensorSpec source = from.model().tensors().get(f);
            for (int j = 0; j < geometry[t].length; j++) {
                int[] dest = to.holders(tt, j);
                if (dest.length == 0) {
                    pairStart[t][j] = -1;
                    continue;
                }
                ShardGeometry g = geometry(t, j);
                HolderIndex keep = g.keepCell >= 0 ? holders(f, source, g.keepCell) : null;
                kept += keptRanks.computeIfAbsent(new KeepKey(dest, keep), k -> countKept(dest, k.keep())) * g.shardBytes;
                pairStart[t][j] = pairReads.size();
                for (int k = 0; k < g.cells.length; k++) {
                    HolderIndex h = holders(f, source, g.cells[k]);
                    CellReads cr = reads.computeIfAbsent(new ReadsKey(dest, keep, h), x -> classify(dest, keep, h));
                    onDevice += cr.splitRanks * g.bytes[k];
                    intra += cr.localRanks * g.bytes[k];
                    inter += cr.remoteRanks * g.bytes[k];
                    addPair(g.bytes[k], cr, h);
                }
            }
        }
    }

    /** The shard geometry of new tensor {@code t}'s cell {@code j}, computed once. */
    ShardGeometry geometry(int t, int j) {
        ShardGeometry g = geometry[t][j];
        if (g == null) {
            TensorSpec source = from.model().tensors().get(sourceOf[t]);
            g = new ShardGeometry(from, source, to.cell(to.model().tensors().get(t), j));
            geometry[t][j] = g;
        }
        return g;
    }

    /** The holders of an old cell, indexed once per holder set. */
    HolderIndex holders(int f, TensorSpec source, int cell) {
        return holderIndex.of(f, source, cell);
    }

    private boolean kept(int rank, HolderIndex keep) {
        return keep != null && sameDevice[rank] >= 0 && keep.holds(sameDevice[rank]);
    }

    private long countKept(int[] dest, HolderIndex keep) {
        long n = 0;
        for (int r : dest) {
            n += kept(r, keep) ? 1 : 0;
        }
        return n;
    }

    private CellReads classify(int[] dest, HolderIndex keep, HolderIndex h) {
        long split = 0;
        long local = 0;
        long remote = 0;
        java.util.BitSet units = new java.util.BitSet(destWorkerIds.length);
        for (int r : dest) {
            if (kept(r, keep)) {
                continue;
            }
            if (sameDevice[r] >= 0 && h.holds(sameDevice[r])) {
                split++;
            } else if (destAsSource[r] >= 0 && h.firstOnWorker[destAsSource[r]] >= 0) {
                local++;
            } else {
                remote++;
                units.set(destIndex[r]);
            }
        }
        return new CellReads(reads.size(), split, local, remote, units.stream().toArray());
    }

    private void addPair(long bytes, CellReads cr, HolderIndex h) {
        int i = pairReads.size();
        if (i == pairBytes.length) {
            pairBytes = Arrays.copyOf(pairBytes, Math.addExact(i, i / 2 + 16));
        }
        pairBytes[i] = bytes;
        pairReads.add(cr);
        pairHolders.add(h);
    }

    /** The pairs read remotely, largest first, then by holder set, combination and enumeration order. */
    private Integer[] remoteOrder() {
        List<Integer> remote = new ArrayList<>();
        for (int i = 0; i < pairReads.size(); i++) {
            if (pairReads.get(i).units.length > 0 && pairBytes[i] > 0) {
                remote.add(i);
            }
        }
        Integer[] order = remote.toArray(new Integer[0]);
        Arrays.sort(order, (a, b) -> {
            int c = Long.compare(pairBytes[b], pairBytes[a]);
            if (c == 0) {
                c = Integer.compare(setIds.get(pairHolders.get(a)), setIds.get(pairHolders.get(b)));
            }
            if (c == 0) {
                c = Integer.compare(pairReads.get(a).id, pairReads.get(b).id);
            }
            return c != 0 ? c : Integer.compare(a, b);
        });
        return order;
    }

    private boolean sameRun(int a, int b) {
        return pairBytes[a] == pairBytes[b] && pairHolders.get(a) == pairHolders.get(b)
                && pairReads.get(a) == pairReads.get(b);
    }

    /** Deals a run's units over its holders (see {@link Dealing#deal}); counts what each destination receives. */
    private long[] deal(Integer[] order, int at, int end) {
        int[] units = pairReads.get(order[at]).units;
        long bytes = pairBytes[order[at]];
        for (int u : units) {
            received[u] += (end - at) * bytes;
        }
        return Dealing.deal(sent, pairHolders.get(order[at]).workers, (long) units.length * (end - at), bytes);
    }

    private void refine(Integer[] order, List<int[]> runs, List<long[]> counts) {
        List<Dealing.Run> all = new ArrayList<>(runs.size());
        for (int r = 0; r < runs.size(); r++) {
            int first = order[runs.get(r)[0]];
            all.add(new Dealing.Run(pairHolders.get(first).workers, pairBytes[first], counts.get(r)));
        }
        Dealing.refine(sent, all);
    }

    /** Records which holder serves the own worker's unit of each pair of a run: units go out in holder order, in blocks. */
    private void choose(Integer[] order, int at, int end, long[] counts, int own, int[] chosen) {
        HolderIndex h = pairHolders.get(order[at]);
        int[] units = pairReads.get(order[at]).units;
        int pos = Arrays.binarySearch(units, own);
        for (int p = at; pos >= 0 && p < end; p++) {
            long x = (long) (p - at) * units.length + pos;
            int i = 0;
            while (x >= counts[i]) {
                x -= counts[i++];
            }
            chosen[order[p]] = h.workers[i];
        }
    }
}
