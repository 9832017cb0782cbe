package io.tenplex.server.jobs;

import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.IndexRange;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.server.control.GeneratedFile;
import io.tenplex.server.control.Range;
import io.tenplex.server.control.Shard;
import io.tenplex.server.control.ValueCopy;
import io.tenplex.server.control.WorkerPlan;
import io.tenplex.transform.Piece;
import io.tenplex.transform.ShardPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** A plan's part for one worker, as the protobuf message daemons exchange, and back; and a part's status. */
public final class PlanCodec {
    private PlanCodec() {
    }

    /** The part as the wire message. */
    public static WorkerPlan encode(PlanPart p) {
        WorkerPlan.Builder b = WorkerPlan.newBuilder().setJob(p.job()).setPlanId(p.planId()).setWorker(p.worker())
                .setStep(p.step()).putAllDaemons(p.daemons()).setSourceDir(p.sourceDir()).setOutputDir(p.outputDir())
                .putAllFlowRates(p.flowRates()).addAllParticipants(p.participants()).setCoordinator(p.coordinator())
                .setReconfiguration(p.reconfiguration()).setPreparedTimeoutMillis(p.preparedTimeoutMillis())
                .addAllRebuilding(p.rebuilding());
        p.shards().forEach(s -> b.addShards(shard(s, p.sourceDevices())));
        p.values().forEach(v -> b.addValues(ValueCopy.newBuilder().setDestRank(v.destRank()).setKey(v.key())
                .setSourceRank(v.sourceRank())));
        p.generated().forEach(g -> b.addGenerated(GeneratedFile.newBuilder().setDestRank(g.destRank()).setPath(g.path())
                .setContent(com.google.protobuf.ByteString.copyFromUtf8(g.content()))));
        p.sourceDevices().forEach(d -> b.addSourceDevices(device(d)));
        return b.build();
    }

    /**
     * The part a wire message describes, checked first ({@link #check}).
     *
     * @throws IllegalArgumentException naming the value and the limit
     */
    public static PlanPart decode(WorkerPlan wp) {
        List<io.tenplex.ptc.Device> sources = wp.getSourceDevicesList().stream().map(PlanCodec::device).toList();
        List<PlanPart.Value> values = wp.getValuesList().stream()
                .map(v -> new PlanPart.Value(v.getDestRank(), v.getKey(), v.getSourceRank())).toList();
        List<PlanPart.Generated> generated = wp.getGeneratedList().stream()
                .map(g -> new PlanPart.Generated(g.getDestRank(), g.getPath(), g.getContent().toStringUtf8())).toList();
        return new PlanPart(wp.getJob(), wp.getPlanId(), wp.getWorker(), wp.getStep(), new TreeMap<>(wp.getDaemonsMap()),
                wp.getSourceDir(), wp.getOutputDir(), shards(wp, sources), values, generated, sources,
                Map.copyOf(wp.getFlowRatesMap()), wp.getParticipantsList(), wp.getCoordinator(), wp.getReconfiguration(),
                wp.getPreparedTimeoutMillis(), wp.getRebuildingList());
    }

    /** The longest note of a part's status taken from a peer (characters); longer ones are cut. */
    static final int MAX_NOTE = 600;

    public static io.tenplex.server.control.PartStatus encode(PartStatus s) {
        return io.tenplex.server.control.PartStatus.newBuilder().setPlanId(s.planId()).setState(s.state())
                .setError(s.error()).setBytesTotal(s.bytesTotal()).setBytesDone(s.bytesDone())
                .setLocalBytes(s.localBytes()).setRemoteBytes(s.remoteBytes()).setRetries(s.retries())
                .setCorrupted(s.corrupted()).setExecuteNanos(s.executeNanos())
                .setSlowMemory(s.slowMemory() == null ? "" : s.slowMemory()).build();
    }

    public static PartStatus decode(io.tenplex.server.control.PartStatus s) {
        return new PartStatus(s.getPlanId(), s.getState(), s.getError(), s.getBytesTotal(), s.getBytesDone(),
                s.getLocalBytes(), s.getRemoteBytes(), s.getRetries(), s.getCorrupted(), s.getExecuteNanos(),
                s.getSlowMemory().length() <= MAX_NOTE ? s.getSlowMemory() : s.getSlowMemory().substring(0, MAX_NOTE) + "...");
    }

    private static io.tenplex.server.control.Device device(io.tenplex.ptc.Device d) {
        return io.tenplex.server.control.Device.newBuilder().setWorker(d.worker()).setLocal(d.local()).build();
    }

    private static io.tenplex.ptc.Device device(io.tenplex.server.control.Device d) {
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

    private static Shard shard(ShardPlan s, List<io.tenplex.ptc.Device> sources) {
        Shard.Builder b = Shard.newBuilder().setDestRank(s.destRank()).setDestDevice(device(s.destDevice()))
                .setTensor(s.tensor()).setKey(s.key()).setDtype(s.dtype().wireName());
        for (long d : s.shape().dims()) {
            b.addShape(d);
        }
        for (Piece p : s.pieces()) {
            io.tenplex.server.control.Piece.Builder pb = io.tenplex.server.control.Piece.newBuilder()
                    .setKind(p.kind().ordinal()).setSourceRank(p.sourceRank()).setSourceKey(p.sourceKey())
                    .setSource(region(p.source())).setBytes(p.bytes());
            for (long o : p.destOffset()) {
                pb.addDestOffset(o);
            }
            for (int r : p.replicas()) {
                pb.addReplicas(r);
            }
            if (p.sourceDevice() != null && !p.sourceDevice().equals(sources.get(p.sourceRank()))) {
                pb.setSourceDevice(device(p.sourceDevice())); // read from a copy, not the rank's device
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
        for (int r : wp.getRebuildingList()) {
            checkRank(r, sources, "rebuilding rank");
        }
        for (Shard s : wp.getShardsList()) {
            DType.fromName(s.getDtype());
            int dims = s.getShapeCount();
            for (io.tenplex.server.control.Piece p : s.getPiecesList()) {
                String where = "piece " + p.getSourceKey() + " of rank " + s.getDestRank() + "'s " + s.getKey() + ": ";
                checkRank(p.getSourceRank(), sources, where + "source_rank");
                for (int r : p.getReplicasList()) {
                    checkRank(r, sources, where + "replica");
                }
                if (p.hasSourceDevice() && p.getSourceDevice().getWorker() != wp.getWorker()
                        && !wp.getDaemonsMap().containsKey(p.getSourceDevice().getWorker())) {
                    throw new IllegalArgumentException(where + "source_device on worker " + p.getSourceDevice().getWorker()
                            + ", which has no daemon address in the part");
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
        for (ValueCopy v : wp.getValuesList()) {
            checkRank(v.getSourceRank(), sources, "value " + v.getKey() + ": source_rank");
        }
    }

    private static void checkRank(int rank, int sources, String what) {
        if (rank < 0 || rank >= sources) {
            throw new IllegalArgumentException(what + " " + rank + " is not in [0, " + sources + ") (the part lists "
                    + sources + " source devices)");
        }
    }

    /** A piece's byte count sizes the buffer it is read into: it must be what its region holds. */
    private static void checkBytes(io.tenplex.server.control.Piece p, Region src, int item, Shard s) {
        long want;
        try {
            want = Math.multiplyExact(src.volume(), (long) item);
        } catch (ArithmeticException e) {
            want = -1;
        }
        if (want < 0 || p.getBytes() != want) {
            throw new IllegalArgumentException("piece " + p.getSourceKey() + " of rank " + s.getDestRank() + "'s "
                    + s.getKey() + ": " + p.getBytes() + " bytes for a region " + src + " of " + item + "-byte items ("
                    + (want < 0 ? "more than 2^63 bytes" : want + " bytes") + ")");
        }
    }

    /** The shards of a worker's part, as the executor takes them. */
    private static List<ShardPlan> shards(WorkerPlan wp, List<io.tenplex.ptc.Device> sources) {
        check(wp);
        List<ShardPlan> out = new ArrayList<>();
        for (Shard s : wp.getShardsList()) {
            List<Piece> pieces = new ArrayList<>();
            int item = DType.fromName(s.getDtype()).itemSize();
            for (io.tenplex.server.control.Piece p : s.getPiecesList()) {
                Region src = region(p.getSource());
                checkBytes(p, src, item, s);
                long[] off = p.getDestOffsetList().stream().mapToLong(Long::longValue).toArray();
                long[] global = off.clone(); // the global region is informational; keep the destination's
                pieces.add(new Piece(Piece.Kind.values()[p.getKind()], p.getSourceRank(), p.hasSourceDevice()
                        ? device(p.getSourceDevice()) : sources.get(p.getSourceRank()),
                        p.getSourceKey(), src, Region.at(global, src.shape().dims()), off, p.getBytes(),
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
