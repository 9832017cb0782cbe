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
import java.util.TreeMap;

/**
 * Fills a {@link PlanTable}: for every destination shard (rank order, then model order) its pieces,
 * each taken from the destination device, else its worker, else another worker; then the remote
 * pieces, largest first (ties in plan order), each from the holding worker that has sent least so
 * far. The geometry of shards is computed once per (tensor, cell) and the holders once per holder
 * set; per shard only array look-ups remain.
 */
final class PlanBuilder {
    private final Ptc from;
    private final Ptc to;
    private final int[] sourceOf;
    private final ShardGeometry[][] geometry;
    private final HolderIndex[][] holderIndex;
    private final Map<Long, HolderIndex> sets = new HashMap<>();
    private final int[] workerOfRank;
    private final int[] workerIds;
    private final long[] sent;
    private final IntList shardRank = new IntList();
    private final IntList shardTensor = new IntList();
    private final IntList pieceStart = new IntList();
    private final IntList pieceSource = new IntList();
    private final ByteList pieceKind = new ByteList();
    private final RemotePieces remote = new RemotePieces();
    private long onDevice;
    private long intra;
    private long kept;

    PlanBuilder(Ptc from, Ptc to) {
        this.from = from;
        this.to = to;
        List<TensorSpec> toTensors = to.model().tensors();
        Map<TensorSpec, Integer> fromIndex = new IdentityHashMap<>();
        for (TensorSpec t : from.model().tensors()) {
            fromIndex.put(t, fromIndex.size());
        }
        this.sourceOf = new int[toTensors.size()];
        this.geometry = new ShardGeometry[toTensors.size()][];
        for (int i = 0; i < toTensors.size(); i++) {
            sourceOf[i] = fromIndex.get(Planner.source(from, to, toTensors.get(i).name()));
            geometry[i] = new ShardGeometry[to.cells(toTensors.get(i))];
        }
        this.holderIndex = new HolderIndex[from.model().tensors().size()][];
        this.workerIds = from.devices().stream().mapToInt(Device::worker).distinct().sorted().toArray();
        this.workerOfRank = new int[from.worldSize()];
        for (int r = 0; r < workerOfRank.length; r++) {
            workerOfRank[r] = Arrays.binarySearch(workerIds, from.device(r).worker());
        }
        this.sent = new long[workerIds.length];
    }

    PlanTable build() {
        Map<TensorSpec, Integer> toIndex = new IdentityHashMap<>();
        for (TensorSpec t : to.model().tensors()) {
            toIndex.put(t, toIndex.size());
        }
        Map<List<TensorSpec>, int[]> indexes = new IdentityHashMap<>();
        for (int rank = 0; rank < to.worldSize(); rank++) {
            int[] tensors = indexes.computeIfAbsent(to.tensorsOf(rank), l -> l.stream().mapToInt(toIndex::get).toArray());
            int tp = to.layout().coord(rank, to.config()).tp();
            Device dest = to.device(rank);
            int sameDevice = from.rankOn(dest);
            int destWorker = Arrays.binarySearch(workerIds, dest.worker());
            for (int t : tensors) {
                draft(rank, t, geometry[t].length == 1 ? 0 : tp, sameDevice, destWorker < 0 ? -1 : destWorker);
            }
        }
        pieceStart.add(pieceSource.size());
        long lowerBound = remote.bytes();
        Map<Integer, Long> received = balance();
        Map<Integer, Long> sentBy = new TreeMap<>();
        for (int w = 0; w < sent.length; w++) {
            if (sent[w] > 0) {
                sentBy.put(workerIds[w], sent[w]);
            }
        }
        report = new PlanReport(onDevice, intra, lowerBound, lowerBound, kept, Map.copyOf(sentBy), Map.copyOf(received));
        return new PlanTable(from, to, sourceOf, geometry, shardRank.toArray(), shardTensor.toArray(),
                pieceStart.toArray(), pieceSource.toArray(), pieceKind.toArray());
    }

    private PlanReport report;

    /** The report of the plan built (after {@link #build()}). */
    PlanReport report() {
        return report;
    }

    /** The pieces of one destination shard: kept in place, or one per overlapping old cell, sourced nearest first. */
    private void draft(int rank, int t, int cell, int sameDevice, int destWorker) {
        shardRank.add(rank);
        shardTensor.add(t);
        pieceStart.add(pieceSource.size());
        int f = sourceOf[t];
        TensorSpec source = from.model().tensors().get(f);
        ShardGeometry g = geometry[t][cell];
        if (g == null) {
            g = new ShardGeometry(from, source, to.cell(to.model().tensors().get(t), cell));
            geometry[t][cell] = g;
        }
        if (g.keepCell >= 0 && sameDevice >= 0 && holders(f, source, g.keepCell).holds(sameDevice)) {
            piece(Piece.Kind.KEEP, sameDevice);
            kept += g.shardBytes;
            return;
        }
        for (int k = 0; k < g.cells.length; k++) {
            HolderIndex h = holders(f, source, g.cells[k]);
            if (sameDevice >= 0 && h.holds(sameDevice)) {
                piece(Piece.Kind.SPLIT, sameDevice);
                onDevice += g.bytes[k];
            } else if (destWorker >= 0 && h.firstOnWorker[destWorker] >= 0) {
                piece(Piece.Kind.LOCAL, h.firstOnWorker[destWorker]);
                intra += g.bytes[k];
            } else {
                remote.add(pieceSource.size(), g.bytes[k], h, to.device(rank).worker());
                piece(Piece.Kind.REMOTE, h.holders[0]);
            }
        }
    }

    private void piece(Piece.Kind kind, int source) {
        pieceKind.add((byte) kind.ordinal());
        pieceSource.add(source);
    }

    private HolderIndex holders(int f, TensorSpec source, int cell) {
        HolderIndex[] byCell = holderIndex[f];
        if (byCell == null) {
            byCell = new HolderIndex[from.cells(source)];
            holderIndex[f] = byCell;
        }
        HolderIndex h = byCell[cell];
        if (h == null) {
            h = sets.computeIfAbsent(from.holderSet(source, cell), k -> new HolderIndex(from.holders(source, cell),
                    workerOfRank, sent));
            byCell[cell] = h;
        }
        return h;
    }

    /** Chooses the holder of every remote piece; answers the bytes each worker receives. */
    private Map<Integer, Long> balance() {
        Map<Integer, List<HolderIndex>> setsOfWorker = new HashMap<>();
        for (HolderIndex h : sets.values()) {
            for (int w = 0; w < sent.length; w++) {
                if (h.hasWorker(w)) {
                    setsOfWorker.computeIfAbsent(w, x -> new ArrayList<>()).add(h);
                }
            }
        }
        HolderIndex[][] byWorker = new HolderIndex[sent.length][];
        setsOfWorker.forEach((w, l) -> byWorker[w] = l.toArray(new HolderIndex[0]));
        Map<Integer, Long> received = new TreeMap<>();
        remote.largestFirst((piece, bytes, set, destWorker) -> {
            int w = set.leastLoaded();
            sent[w] += bytes;
            for (HolderIndex h : byWorker[w]) {
                h.grew(w);
            }
            pieceSource.set(piece, set.firstOnWorker[w]);
            received.merge(destWorker, bytes, Long::sum);
        });
        return received;
    }
}
