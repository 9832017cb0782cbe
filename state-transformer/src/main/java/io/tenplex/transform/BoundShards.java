package io.tenplex.transform;

import io.tenplex.ptc.Device;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.RandomAccess;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * A plan's shards bound to stored paths ({@link Plan#withPaths}), each bound when it is read: a bound
 * shard holds its own paths and replica lists (about 300 bytes a piece at 64 data-parallel replicas), so
 * binding every shard of a plan over thousands of devices at once would need gigabytes (a plan of one
 * daemon's part, whose shards the part holds anyway, keeps them once bound). The binding functions
 * must answer the same for the same arguments every time. Immutable once built.
 */
final class BoundShards extends AbstractList<ShardPlan> implements RandomAccess {
    final List<ShardPlan> base;
    private final List<Device> sourceDevices;
    private final BiFunction<Integer, String, String> sourcePath;
    private final Function<ShardPlan, String> destPath;
    /** Every shard bound, kept ({@link #keepAll}): a part's few thousand, which it holds anyway; else null. */
    private volatile ShardPlan[] kept;

    BoundShards(List<ShardPlan> base, List<Device> sourceDevices, BiFunction<Integer, String, String> sourcePath,
            Function<ShardPlan, String> destPath) {
        this.base = base;
        this.sourceDevices = sourceDevices;
        this.sourcePath = sourcePath;
        this.destPath = destPath;
    }

    @Override
    public int size() {
        return base.size();
    }

    @Override
    public ShardPlan get(int i) {
        ShardPlan[] k = kept;
        return k != null ? k[i] : bind(base.get(i));
    }

    /** Binds every shard once and drops it: a piece no holder stores fails here, before the plan is used. */
    void checkAll() {
        for (ShardPlan s : base) {
            bind(s);
        }
    }

    /** Binds every shard once and keeps it, so that it is not bound again when read: for a plan of one part. */
    void keepAll() {
        ShardPlan[] k = new ShardPlan[base.size()];
        for (int i = 0; i < k.length; i++) {
            k[i] = bind(base.get(i));
        }
        kept = k;
    }

    /** @throws IllegalArgumentException when no holder of a piece stores it, or two store it under different paths */
    ShardPlan bind(ShardPlan s) {
        List<Piece> pieces = new ArrayList<>(s.pieces().size());
        for (Piece p : s.pieces()) {
            pieces.add(bind(s, p));
        }
        return new ShardPlan(s.destRank(), s.destDevice(), s.tensor(), destPath.apply(s), s.shape(), s.dtype(), pieces,
                s.padding());
    }

    private Piece bind(ShardPlan s, Piece p) {
        int[] candidates = candidates(p);
        int[] holders = new int[candidates.length];
        int n = 0;
        String path = null;
        for (int r : candidates) {
            String at = sourcePath.apply(r, p.sourceKey());
            if (at == null) {
                continue;
            }
            if (path != null && !path.equals(at)) {
                throw new IllegalArgumentException("ranks " + holders[0] + " and " + r + " store " + p.sourceKey()
                        + " under different paths: " + path + ", " + at);
            }
            path = at;
            holders[n++] = r;
        }
        if (path == null) {
            throw new IllegalArgumentException("no rank of " + Arrays.toString(candidates) + " saved " + p.sourceKey()
                    + " (needed by rank " + s.destRank() + ")");
        }
        int rank = holders[0];
        Device d = rank == p.sourceRank() && p.sourceDevice() != null ? p.sourceDevice()
                : sourceDevices.get(rank); // the piece's own source: a copy of the rank's tree, when recovering
        Piece.Kind kind = rank == p.sourceRank() ? p.kind()
                : d.equals(s.destDevice()) ? Piece.Kind.SPLIT
                        : d.worker() == s.destDevice().worker() ? Piece.Kind.LOCAL : Piece.Kind.REMOTE;
        int[] sorted = Arrays.copyOf(holders, n);
        Arrays.sort(sorted);
        return new Piece(kind, rank, d, path, p.source(), p.global(), p.destOffset(), p.bytes(), sorted);
    }

    /** The piece's chosen rank first, then its other replicas. */
    private static int[] candidates(Piece p) {
        int[] r = p.replicas();
        int[] out = new int[r.length + 1];
        out[0] = p.sourceRank();
        int n = 1;
        for (int x : r) {
            if (x != p.sourceRank()) {
                out[n++] = x;
            }
        }
        return Arrays.copyOf(out, n);
    }
}
