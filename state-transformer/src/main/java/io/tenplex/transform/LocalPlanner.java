package io.tenplex.transform;

import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.ptc.ValueSpec;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * One daemon's own part of a change, planned by that daemon (the paper's per-worker State
 * Transformer, section 5.1 steps 3-4): the destination shards of the new ranks on its worker, each
 * piece read on the device, on the worker, or from the holder that {@link PairBalance} deals it to.
 * Every daemon that plans the same change from the same two PTCs makes the same choices, so no
 * daemon needs another's part: the union of all workers' parts is a whole plan, with the same shards,
 * pieces, kinds and bytes as {@link Planner#plan}'s (only which replica serves a remote piece may
 * differ). The report is the whole change's (totals, and what each worker sends and receives, a
 * remote piece counted once per destination worker), so pacing needs nothing from other daemons.
 */
public final class LocalPlanner {
    private LocalPlanner() {
    }

    /**
     * A daemon's own part and the digest of the whole change's choices: every daemon that planned the
     * same change alike has the same digest, so comparing digests finds a daemon that planned it
     * differently (a version skew, a bug) before any byte moves.
     */
    public record OwnPart(Plan plan, String digest) {}

    /** As {@link #planFor(Ptc, Ptc, Map, int)} without partner copies. */
    public static Plan planFor(Ptc from, Ptc to, int worker) {
        return planFor(from, to, Map.of(), worker);
    }

    /**
     * @param copies per old rank, the workers keeping a complete copy of its tree (see
     *     {@link Planner#plan(Ptc, Ptc, Map)})
     * @param worker the worker whose new ranks' shards are planned
     * @return a plan whose shards and values are those of {@code worker}'s new ranks (rank order, then
     *     model order), with the whole change's report
     */
    public static Plan planFor(Ptc from, Ptc to, Map<Integer, List<Integer>> copies, int worker) {
        return part(from, to, copies, worker).plan();
    }

    /** As {@link #planFor(Ptc, Ptc, Map, int)}, with the digest of the whole change's choices. */
    public static OwnPart part(Ptc from, Ptc to, Map<Integer, List<Integer>> copies, int worker) {
        Planner.checkSameModel(from, to);
        PairBalance b = new PairBalance(from, to, copies);
        int[] chosen = b.run(worker);
        Map<TensorSpec, Integer> toIndex = new IdentityHashMap<>();
        for (TensorSpec t : to.model().tensors()) {
            toIndex.put(t, toIndex.size());
        }
        Part part = new Part(b, chosen, !copies.isEmpty());
        List<Integer> ranks = to.ranksOnWorker(worker);
        for (int rank : ranks) {
            int tp = to.layout().coord(rank, to.config()).tp();
            for (TensorSpec t : to.tensorsOf(rank)) {
                int i = toIndex.get(t);
                part.draft(rank, i, b.geometry[i].length == 1 ? 0 : tp);
            }
        }
        PlanReport report = new PlanReport(b.onDevice, b.intra, b.inter, b.inter, b.kept,
                SourceWorkers.byWorker(b.workerIds, b.sent), SourceWorkers.byWorker(b.destWorkerIds, b.received));
        return new OwnPart(new Plan(from.config(), to.config(), part.table(), values(from, to, ranks), report,
                from.devices(), to.devices(), Planner.tensorKeys(from)), b.digest());
    }

    /** The value copies of the given new ranks. */
    private static List<ValueCopy> values(Ptc from, Ptc to, List<Integer> ranks) {
        List<ValueCopy> out = new ArrayList<>();
        for (int rank : ranks) {
            RankLayout.Coord c = to.layout().coord(rank, to.config());
            for (ValueSpec v : to.model().values()) {
                int src = from.valueSource(v, c.tp(), c.dp(), c.pp());
                out.add(new ValueCopy(rank, v.key(), src, from.device(src)));
            }
        }
        return out;
    }

    /** The own shards' tables, filled as {@link PlanBuilder} fills a whole plan's. */
    private static final class Part {
        private final PairBalance b;
        private final int[] chosen;
        private final IntList shardRank = new IntList(64);
        private final IntList shardTensor = new IntList(64);
        private final IntList pieceStart = new IntList(64);
        private final IntList pieceSource = new IntList(64);
        private final ByteList pieceKind = new ByteList(64);
        private final IntList pieceCopy;

        Part(PairBalance b, int[] chosen, boolean copies) {
            this.b = b;
            this.chosen = chosen;
            this.pieceCopy = copies ? new IntList(64) : null;
        }

        void draft(int rank, int t, int cell) {
            shardRank.add(rank);
            shardTensor.add(t);
            pieceStart.add(pieceSource.size());
            int f = b.sourceOf[t];
            TensorSpec source = b.from.model().tensors().get(f);
            ShardGeometry g = b.geometry(t, cell);
            int sameDevice = b.sameDevice[rank];
            int destWorker = b.destAsSource[rank];
            if (g.keepCell >= 0 && sameDevice >= 0 && b.holders(f, source, g.keepCell).holds(sameDevice)) {
                piece(Piece.Kind.KEEP, sameDevice, -1);
                return;
            }
            for (int k = 0; k < g.cells.length; k++) {
                HolderIndex h = b.holders(f, source, g.cells[k]);
                if (sameDevice >= 0 && h.holds(sameDevice)) {
                    piece(Piece.Kind.SPLIT, sameDevice, -1);
                } else if (destWorker >= 0 && h.firstOnWorker[destWorker] >= 0) {
                    piece(Piece.Kind.LOCAL, h.firstOnWorker[destWorker], destWorker);
                } else {
                    int w = g.bytes[k] == 0 ? h.workers[0] : chosen[b.pairStart[t][cell] + k];
                    if (w < 0) {
                        throw new IllegalStateException("no holder was dealt to rank " + rank + "'s read of "
                                + source.name() + " cell " + g.cells[k]);
                    }
                    piece(Piece.Kind.REMOTE, h.firstOnWorker[w], w);
                }
            }
        }

        /** @param worker the dense worker it is read on when that may be a copy's, else -1 */
        private void piece(Piece.Kind kind, int source, int worker) {
            pieceKind.add((byte) kind.ordinal());
            pieceSource.add(source);
            if (pieceCopy != null) {
                pieceCopy.add(worker >= 0 && worker != b.workerOfRank[source] ? b.workerIds[worker] : -1);
            }
        }

        PlanTable table() {
            pieceStart.add(pieceSource.size());
            return new PlanTable(b.from, b.to, b.sourceOf, b.geometry, shardRank.toArray(), shardTensor.toArray(),
                    pieceStart.toArray(), pieceSource.toArray(), pieceKind.toArray(),
                    pieceCopy == null ? null : pieceCopy.toArray(), b.copySpare);
        }
    }
}
