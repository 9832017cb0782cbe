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
    private final HolderIndexes holderIndex;
    private final Map<List<Integer>, WorkerHeap> heaps = new HashMap<>();
    private final int[] workerOfRank;
    private final int[][] copyWorkers;
    private final int copySpare;
    private final int[] workerIds;
    private final long[] sent;
    private final int[] destWorkerIds;
    private final long[] received;
    private final IntList shardRank;
    private final IntList shardTensor;
    private final IntList pieceStart;
    private final IntList pieceSource;
    private final ByteList pieceKind;
    private final IntList pieceCopy;
    private final RemotePieces remote;
    private long onDevice;
    private long intra;
    private long kept;

    PlanBuilder(Ptc from, Ptc to) {
        this(from, to, Map.of());
    }

    /** @param copies per old rank, other workers keeping a complete copy of its tree (read there when it is cheaper) */
    PlanBuilder(Ptc from, Ptc to, Map<Integer, List<Integer>> copies) {
        this.from = from;
        this.to = to;
        List<TensorSpec> toTensors = to.model().tensors();
        this.sourceOf = Planner.sourceOf(from, to);
        this.geometry = new ShardGeometry[toTensors.size()][];
        for (int i = 0; i < toTensors.size(); i++) {
            geometry[i] = new ShardGeometry[to.cells(toTensors.get(i))];
        }
        SourceWorkers sources = SourceWorkers.of(from, copies);
        this.workerIds = sources.ids();
        this.workerOfRank = sources.ofRank();
        this.copyWorkers = sources.copies();
        this.copySpare = sources.copySpare();
        this.sent = new long[workerIds.length];
        this.holderIndex = new HolderIndexes(from, ranks -> new HolderIndex(ranks, workerOfRank, copyWorkers,
                sent.length, this::heapOf));
        this.destWorkerIds = to.devices().stream().mapToInt(Device::worker).distinct().sorted().toArray();
        this.received = new long[destWorkerIds.length];
        long shards = 0;
        for (int rank = 0; rank < to.worldSize(); rank++) {
            shards += to.tensorsOf(rank).size();
        }
        int n = (int) Math.min(Integer.MAX_VALUE - 16, shards);
        this.shardRank = new IntList(n);
        this.shardTensor = new IntList(n);
        this.pieceStart = new IntList(n + 1);
        this.pieceSource = new IntList(n); // most shards are one piece; more grow the tables
        this.pieceKind = new ByteList(n);
        this.pieceCopy = copies.isEmpty() ? null : new IntList(n);
        this.remote = new RemotePieces(n / 4);
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
            int destIndex = Arrays.binarySearch(destWorkerIds, dest.worker());
            for (int t : tensors) {
                draft(rank, t, geometry[t].length == 1 ? 0 : tp, sameDevice, destWorker < 0 ? -1 : destWorker, destIndex);
            }
        }
        pieceStart.add(pieceSource.size());
        long lowerBound = remote.bytes();
        balance();
        report = new PlanReport(onDevice, intra, lowerBound, lowerBound, kept, SourceWorkers.byWorker(workerIds, sent),
                SourceWorkers.byWorker(destWorkerIds, received));
        return new PlanTable(from, to, sourceOf, geometry, shardRank.toArray(), shardTensor.toArray(),
                pieceStart.toArray(), pieceSource.toArray(), pieceKind.toArray(),
                pieceCopy == null ? null : pieceCopy.toArray(), copySpare);
    }

    private PlanReport report;

    /** The report of the plan built (after {@link #build()}). */
    PlanReport report() {
        return report;
    }

    /** The pieces of one destination shard: kept in place, or one per overlapping old cell, sourced nearest first. */
    private void draft(int rank, int t, int cell, int sameDevice, int destWorker, int destIndex) {
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
                piece(Piece.Kind.LOCAL, h.firstOnWorker[destWorker], destWorker);
                intra += g.bytes[k];
            } else {
                remote.add(pieceSource.size(), g.bytes[k], h, destIndex);
                piece(Piece.Kind.REMOTE, h.holders[0]);
            }
        }
    }

    private void piece(Piece.Kind kind, int source) {
        piece(kind, source, -1);
    }

    /** @param worker the dense worker it is read on when that is not the rank's own (a copy), else -1 */
    private void piece(Piece.Kind kind, int source, int worker) {
        pieceKind.add((byte) kind.ordinal());
        pieceSource.add(source);
        if (pieceCopy != null) {
            pieceCopy.add(worker >= 0 && worker != workerOfRank[source] ? workerIds[worker] : -1);
        }
    }

    private HolderIndex holders(int f, TensorSpec source, int cell) {
        return holderIndex.of(f, source, cell);
    }

    /** The one heap of these dense workers. */
    private WorkerHeap heapOf(int[] workers) {
        return heaps.computeIfAbsent(Arrays.stream(workers).boxed().toList(), k -> new WorkerHeap(workers, sent));
    }

    /** Chooses the holder of every remote piece; counts the bytes each worker sends and receives. */
    private void balance() {
        Map<Integer, List<WorkerHeap>> heapsOfWorker = new HashMap<>();
        for (WorkerHeap h : heaps.values()) {
            for (int w = 0; w < sent.length; w++) {
                if (h.has(w)) {
                    heapsOfWorker.computeIfAbsent(w, x -> new ArrayList<>()).add(h);
                }
            }
        }
        WorkerHeap[][] byWorker = new WorkerHeap[sent.length][];
        heapsOfWorker.forEach((w, l) -> byWorker[w] = l.toArray(new WorkerHeap[0]));
        int[] chosen = new int[remote.size()];
        int[] at = {0};
        remote.largestFirst((piece, bytes, set, destWorker) -> {
            chosen[at[0]++] = set.heap.leastLoaded();
            int w = set.heap.leastLoaded();
            sent[w] += bytes;
            for (WorkerHeap h : byWorker[w]) {
                h.grew(w);
            }
            int source = set.firstOnWorker[w];
            pieceSource.set(piece, source);
            if (pieceCopy != null) {
                pieceCopy.set(piece, w != workerOfRank[source] ? workerIds[w] : -1);
            }
            received[destWorker] += bytes;
        });
        if (copyWorkers.length > 0) {
            refine(chosen);
        }
    }

    /**
     * With copies, holder sets overlap unevenly and the greedy choice can leave one sender busier
     * than needed: moves remote pieces, largest first, from a sender to a holder that would still send
     * less after taking the piece, until no move helps (at most a few passes). Each move lowers the
     * larger of the two senders' loads, so the busiest sender never gets busier.
     *
     * @param chosen per remote piece in largest-first order, the dense worker chosen
     */
    private void refine(int[] chosen) {
        int[] order = remote.order();
        for (int pass = 0; pass < 8; pass++) {
            boolean moved = false;
            for (int k = 0; k < order.length; k++) {
                int i = order[k];
                long b = remote.bytes(i);
                HolderIndex set = remote.holders(i);
                int w = chosen[k];
                int alt = w;
                for (int x : set.workers) {
                    if (sent[x] < sent[alt]) {
                        alt = x;
                    }
                }
                if (alt != w && sent[alt] + b < sent[w]) {
                    sent[w] -= b;
                    sent[alt] += b;
                    chosen[k] = alt;
                    int source = set.firstOnWorker[alt];
                    pieceSource.set(remote.piece(i), source);
                    pieceCopy.set(remote.piece(i), alt != workerOfRank[source] ? workerIds[alt] : -1);
                    moved = true;
                }
            }
            if (!moved) {
                return;
            }
        }
    }
}
