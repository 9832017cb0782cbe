package io.tenplex.jobs;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.IndexRange;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.server.control.Range;
import io.tenplex.server.control.Shard;
import io.tenplex.server.control.WorkerPlan;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.ShardPlan;
import io.tenplex.transform.ValueCopy;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A plan's part for one worker, as the protobuf message daemons exchange, and back. */
final class PlanCodec {
    private PlanCodec() {
    }

    static WorkerPlan encode(String job, String planId, int worker, Plan plan, int sourceRanks,
            Map<Integer, InetSocketAddress> daemons, long step, String sourceDir, Map<Integer, Map<String, String>> generated) {
        WorkerPlan.Builder b = header(job, planId, worker, step, daemons).setSourceDir(sourceDir);
        java.util.Set<Integer> ranks = new java.util.HashSet<>();
        for (ShardPlan s : plan.shards()) {
            if (s.destDevice().worker() == worker) {
                b.addShards(shard(s, false));
                ranks.add(s.destRank());
            }
        }
        for (ValueCopy v : plan.values()) {
            if (ranks.contains(v.destRank())) {
                b.addValues(value(v.destRank(), v.key(), v.sourceRank()));
            }
        }
        addGenerated(b, ranks, generated);
        addSourceDevices(b, plan, sourceRanks);
        return b.build();
    }

    private static void addGenerated(WorkerPlan.Builder b, java.util.Set<Integer> ranks,
            Map<Integer, Map<String, String>> generated) {
        generated.forEach((rank, files) -> {
            if (ranks.contains(rank)) {
                files.forEach((path, content) -> b.addGenerated(io.tenplex.server.control.GeneratedFile.newBuilder()
                        .setDestRank(rank).setPath(path).setContent(com.google.protobuf.ByteString.copyFromUtf8(content))));
            }
        });
    }

    private static WorkerPlan.Builder header(String job, String planId, int worker, long step,
            Map<Integer, InetSocketAddress> daemons) {
        WorkerPlan.Builder b = WorkerPlan.newBuilder().setJob(job).setPlanId(planId).setWorker(worker).setStep(step);
        daemons.forEach((w, a) -> b.putDaemons(w, a.getHostString() + ":" + a.getPort()));
        return b;
    }

    private static void addSourceDevices(WorkerPlan.Builder b, Plan plan, int sourceRanks) {
        for (int r = 0; r < sourceRanks; r++) {
            b.addSourceDevices(device(plan.sourceDevice(r)));
        }
    }

    private static io.tenplex.server.control.ValueCopy value(int dest, String key, int source) {
        return io.tenplex.server.control.ValueCopy.newBuilder().setDestRank(dest).setKey(key).setSourceRank(source).build();
    }

    /**
     * Central mode, first half: the central worker assembles every destination shard itself (kept
     * pieces become reads too) into {@code staging/<plan>/central}.
     */
    static WorkerPlan encodeCentral(String job, String planId, int central, Plan plan, int sourceRanks,
            Map<Integer, InetSocketAddress> daemons, long step, String sourceDir) {
        WorkerPlan.Builder b = header(job, planId, central, step, daemons).setOutputDir("central").setSourceDir(sourceDir);
        plan.shards().forEach(s -> b.addShards(shard(s, true)));
        plan.values().forEach(v -> b.addValues(value(v.destRank(), v.key(), v.sourceRank())));
        addSourceDevices(b, plan, sourceRanks);
        return b.build();
    }

    /**
     * Central mode, second half: a destination worker fetches each of its shards whole from the
     * central worker's {@code staging/<centralPlan>/central/<rank>/<key>}.
     */
    static WorkerPlan encodeFromCentral(String job, String planId, String centralPlan, int worker, int central,
            Plan plan, Map<Integer, InetSocketAddress> daemons, long step, Map<Integer, Map<String, String>> generated) {
        WorkerPlan.Builder b = header(job, planId, worker, step, daemons)
                .setSourceDir("staging/" + centralPlan + "/central");
        int maxRank = 0;
        java.util.Set<Integer> ranks = new java.util.HashSet<>();
        for (ShardPlan s : plan.shards()) {
            maxRank = Math.max(maxRank, s.destRank());
            if (s.destDevice().worker() != worker) {
                continue;
            }
            ranks.add(s.destRank());
            Shard.Builder sb = Shard.newBuilder().setDestRank(s.destRank()).setDestDevice(device(s.destDevice()))
                    .setTensor(s.tensor()).setKey(s.key()).setDtype(s.dtype().wireName());
            for (long d : s.shape().dims()) {
                sb.addShape(d);
            }
            io.tenplex.server.control.Piece.Builder pb = io.tenplex.server.control.Piece.newBuilder()
                    .setKind(Piece.Kind.REMOTE.ordinal()).setSourceRank(s.destRank()).setSourceKey(s.key())
                    .setSource(region(Region.whole(s.shape()))).setBytes(s.byteSize()).addReplicas(s.destRank());
            for (int i = 0; i < s.shape().rank(); i++) {
                pb.addDestOffset(0);
            }
            b.addShards(sb.addPieces(pb));
        }
        for (ValueCopy v : plan.values()) {
            if (ranks.contains(v.destRank())) {
                b.addValues(value(v.destRank(), v.key(), v.destRank()));
            }
        }
        addGenerated(b, ranks, generated);
        for (int r = 0; r <= maxRank; r++) {
            b.addSourceDevices(device(new io.tenplex.ptc.Device(central, 0)));
        }
        return b.build();
    }

    private static io.tenplex.server.control.Device device(io.tenplex.ptc.Device d) {
        return io.tenplex.server.control.Device.newBuilder().setWorker(d.worker()).setLocal(d.local()).build();
    }

    static io.tenplex.ptc.Device device(io.tenplex.server.control.Device d) {
        return new io.tenplex.ptc.Device(d.getWorker(), d.getLocal());
    }

    private static io.tenplex.server.control.Region region(Region r) {
        io.tenplex.server.control.Region.Builder b = io.tenplex.server.control.Region.newBuilder();
        for (IndexRange x : r.ranges()) {
            b.addRanges(Range.newBuilder().setStart(x.start()).setStop(x.stop()));
        }
        return b.build();
    }

    private static Region region(io.tenplex.server.control.Region r) {
        List<IndexRange> out = new ArrayList<>();
        for (Range x : r.getRangesList()) {
            out.add(IndexRange.of(x.getStart(), x.getStop()));
        }
        return Region.of(out);
    }

    private static Shard shard(ShardPlan s, boolean noKeeps) {
        Shard.Builder b = Shard.newBuilder().setDestRank(s.destRank()).setDestDevice(device(s.destDevice()))
                .setTensor(s.tensor()).setKey(s.key()).setDtype(s.dtype().wireName());
        for (long d : s.shape().dims()) {
            b.addShape(d);
        }
        for (Piece p : s.pieces()) {
            io.tenplex.server.control.Piece.Builder pb = io.tenplex.server.control.Piece.newBuilder()
                    .setKind(noKeeps && p.kind() == Piece.Kind.KEEP ? Piece.Kind.REMOTE.ordinal() : p.kind().ordinal())
                    .setSourceRank(p.sourceRank()).setSourceKey(p.sourceKey())
                    .setSource(region(p.source())).setBytes(p.bytes());
            for (long o : p.destOffset()) {
                pb.addDestOffset(o);
            }
            for (int r : p.replicas()) {
                pb.addReplicas(r);
            }
            b.addPieces(pb);
        }
        for (Region pad : s.padding()) {
            b.addPadding(region(pad));
        }
        return b.build();
    }

    /**
     * Checks a part that came over the wire before anything is built from it: every rank it names
     * has a source device, piece kinds and dtypes are known, regions fit their shapes.
     *
     * @throws IllegalArgumentException naming the value and the limit
     */
    static void check(WorkerPlan wp) {
        int sources = wp.getSourceDevicesCount();
        for (Shard s : wp.getShardsList()) {
            DType.fromName(s.getDtype());
            int dims = s.getShapeCount();
            for (io.tenplex.server.control.Piece p : s.getPiecesList()) {
                String where = "piece " + p.getSourceKey() + " of rank " + s.getDestRank() + "'s " + s.getKey() + ": ";
                checkRank(p.getSourceRank(), sources, where + "source_rank");
                for (int r : p.getReplicasList()) {
                    checkRank(r, sources, where + "replica");
                }
                if (p.getKind() < 0 || p.getKind() >= Piece.Kind.values().length) {
                    throw new IllegalArgumentException(where + "kind " + p.getKind() + " is not in [0, "
                            + (Piece.Kind.values().length - 1) + "]");
                }
                if (p.getSource().getRangesCount() != dims || p.getDestOffsetCount() != dims) {
                    throw new IllegalArgumentException(where + "region and offset must have " + dims + " dimensions, got "
                            + p.getSource().getRangesCount() + " and " + p.getDestOffsetCount());
                }
            }
        }
        for (io.tenplex.server.control.ValueCopy v : wp.getValuesList()) {
            checkRank(v.getSourceRank(), sources, "value " + v.getKey() + ": source_rank");
        }
    }

    private static void checkRank(int rank, int sources, String what) {
        if (rank < 0 || rank >= sources) {
            throw new IllegalArgumentException(what + " " + rank + " is not in [0, " + sources + ") (the part lists "
                    + sources + " source devices)");
        }
    }

    /** The shards of a worker's part, as the executor takes them. */
    static List<ShardPlan> shards(WorkerPlan wp) {
        check(wp);
        List<ShardPlan> out = new ArrayList<>();
        for (Shard s : wp.getShardsList()) {
            List<Piece> pieces = new ArrayList<>();
            for (io.tenplex.server.control.Piece p : s.getPiecesList()) {
                Region src = region(p.getSource());
                long[] off = p.getDestOffsetList().stream().mapToLong(Long::longValue).toArray();
                long[] global = off.clone(); // the global region is informational; keep the destination's
                pieces.add(new Piece(Piece.Kind.values()[p.getKind()], p.getSourceRank(),
                        device(wp.getSourceDevices(p.getSourceRank())), p.getSourceKey(), src,
                        Region.at(global, src.shape().dims()), off, p.getBytes(),
                        p.getReplicasList().stream().mapToInt(Integer::intValue).toArray()));
            }
            List<Region> padding = new ArrayList<>();
            s.getPaddingList().forEach(r -> padding.add(region(r)));
            out.add(new ShardPlan(s.getDestRank(), device(s.getDestDevice()), s.getTensor(), s.getKey(),
                    Shape.of(s.getShapeList().stream().mapToLong(Long::longValue).toArray()), DType.fromName(s.getDtype()),
                    List.copyOf(pieces), List.copyOf(padding)));
        }
        return out;
    }
}
