package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.TensorSpec;
import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;

/**
 * The planner's decisions in primitive arrays, read as the list of destination shards: per shard
 * its rank and tensor, per piece its kind and source rank. Everything else a {@link ShardPlan} says
 * (regions, keys, offsets, replicas, padding) follows from the two PTCs and the shard's
 * {@link ShardGeometry}, so it is built when a shard is read and not kept: a plan over thousands of
 * devices and millions of pieces holds about 17 bytes per piece. Immutable once built.
 */
final class PlanTable extends AbstractList<ShardPlan> implements RandomAccess {
    static final Piece.Kind[] KINDS = Piece.Kind.values();

    private final Ptc from;
    private final Ptc to;
    private final List<TensorSpec> toTensors;
    private final List<TensorSpec> fromTensors;
    private final int[] sourceOf;
    private final ShardGeometry[][] geometry;
    private final int[] shardRank;
    private final int[] shardTensor;
    private final int[] pieceStart;
    private final int[] pieceSource;
    private final byte[] pieceKind;
    private final int[] pieceCopy;
    private final int copySpare;

    /**
     * @param sourceOf per new tensor, the index of the old tensor it is made of
     * @param geometry per new tensor and new cell, its geometry (filled for every shard listed)
     * @param pieceStart per shard, the index of its first piece, and the piece count last
     * @param pieceCopy per piece, the worker keeping the copy of its rank's tree it is read from, or -1
     *     (null: every piece is read from its rank)
     * @param copySpare the device number of a copy on a worker is {@code copySpare + rank}
     */
    PlanTable(Ptc from, Ptc to, int[] sourceOf, ShardGeometry[][] geometry, int[] shardRank, int[] shardTensor,
            int[] pieceStart, int[] pieceSource, byte[] pieceKind, int[] pieceCopy, int copySpare) {
        this.from = from;
        this.to = to;
        this.toTensors = to.model().tensors();
        this.fromTensors = from.model().tensors();
        this.sourceOf = sourceOf;
        this.geometry = geometry;
        this.shardRank = shardRank;
        this.shardTensor = shardTensor;
        this.pieceStart = pieceStart;
        this.pieceSource = pieceSource;
        this.pieceKind = pieceKind;
        this.pieceCopy = pieceCopy;
        this.copySpare = copySpare;
    }

    /** Where piece {@code j} is read: its rank's device, or a device of its own on the worker keeping a copy. */
    private Device sourceDevice(int j, int rank) {
        int copy = pieceCopy == null ? -1 : pieceCopy[j];
        return copy < 0 ? from.device(rank) : new Device(copy, copySpare + rank);
    }

    @Override
    public int size() {
        return shardRank.length;
    }

    /** The workers of the destination devices, ascending. */
    List<Integer> destWorkers() {
        java.util.TreeSet<Integer> out = new java.util.TreeSet<>();
        int last = -1;
        for (int rank : shardRank) {
            if (rank != last) {
                out.add(to.device(rank).worker());
                last = rank;
            }
        }
        return List.copyOf(out);
    }

    /** The new rank of shard {@code i}, without building it. */
    int rankAt(int i) {
        return shardRank[i];
    }

    /** The pieces of shard {@code i}, counted without building it. */
    int piecesAt(int i) {
        return pieceStart[i + 1] - pieceStart[i];
    }

    /** Pieces in all shards. */
    long pieces() {
        return pieceStart[shardRank.length];
    }

    @Override
    public ShardPlan get(int i) {
        java.util.Objects.checkIndex(i, shardRank.length);
        int rank = shardRank[i];
        TensorSpec dt = toTensors.get(shardTensor[i]);
        TensorSpec st = fromTensors.get(sourceOf[shardTensor[i]]);
        int cell = to.cells(dt) == 1 ? 0 : to.layout().coord(rank, to.config()).tp();
        ShardGeometry g = geometry[shardTensor[i]][cell];
        Device dest = to.device(rank);
        int first = pieceStart[i];
        int n = pieceStart[i + 1] - first;
        Piece[] pieces = new Piece[n];
        boolean kept = n == 1 && KINDS[pieceKind[first]] == Piece.Kind.KEEP;
        if (kept) {
            pieces[0] = new Piece(Piece.Kind.KEEP, pieceSource[first], dest, from.key(st), Region.whole(g.region.shape()),
                    g.region, new long[g.region.rank()], g.shardBytes, from.holders(st, g.keepCell));
        } else {
            for (int k = 0; k < n; k++) {
                int c = g.cells[k];
                int src = pieceSource[first + k];
                pieces[k] = Planner.piece(from, st, from.cell(st, c), g.global[k], g.region, from.holders(st, c))
                        .withSource(KINDS[pieceKind[first + k]], src, sourceDevice(first + k, src));
            }
        }
        return new ShardPlan(rank, dest, dt.name(), to.key(dt), g.region.shape(), dt.dtype(), List.of(pieces),
                kept ? List.of() : g.padding);
    }
}
