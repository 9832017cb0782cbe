package io.tenplex.server.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.control.WorkerPlan;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import io.tenplex.transform.ShardPlan;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** A plan's part crosses the wire as protobuf and comes back equal; a part that names what it lacks is refused. */
class PlanCodecTest {
    private static final Model MODEL = MegatronLayout.model(MegatronLayout.Shape.gpt(2, 64, 8, 1000, 16));

    private static PlanPart part() {
        Ptc from = Ptc.packed(MODEL, ParallelConfig.of(2, 1, 1), 1);
        Plan plan = Planner.plan(from, Ptc.packed(MODEL, ParallelConfig.of(1, 2, 1), 1));
        List<Device> sources = IntStream.range(0, from.worldSize()).mapToObj(from::device).toList();
        List<PlanPart.Value> values = plan.values().stream()
                .map(v -> new PlanPart.Value(v.destRank(), v.key(), v.sourceRank())).toList();
        return new PlanPart("gpt", "p7-abc", 1, 42, Map.of(0, "127.0.0.1:20010", 1, "127.0.0.1:20011"), "generations/42",
                "load", plan.shards(), values, List.of(new PlanPart.Generated(1, "iter", "42\n")), sources,
                Map.of(0, 1_000_000_000L), List.of(0, 1), "127.0.0.1:20010", "r3", 60_000, List.of(1));
    }

    /** Every field, with the arrays inside pieces compared by value. */
    private static String describe(PlanPart p) {
        String shards = p.shards().stream().map(PlanCodecTest::describe).collect(Collectors.joining("\n"));
        return String.join("|", p.job(), p.planId(), "" + p.worker(), "" + p.step(), "" + new java.util.TreeMap<>(p.daemons()),
                p.sourceDir(), p.outputDir(), shards, "" + p.values(), "" + p.generated(), "" + p.sourceDevices(),
                "" + new java.util.TreeMap<>(p.flowRates()), "" + p.participants(), p.coordinator(), p.reconfiguration(),
                "" + p.preparedTimeoutMillis());
    }

    private static String describe(ShardPlan s) {
        return s.destRank() + " " + s.destDevice() + " " + s.tensor() + " " + s.key() + " " + s.shape() + " " + s.dtype()
                + " " + s.padding() + " " + s.pieces().stream().map(PlanCodecTest::describe).toList();
    }

    private static String describe(Piece p) {
        return p.kind() + " " + p.sourceRank() + " " + p.sourceDevice() + " " + p.sourceKey() + " " + p.source() + " "
                + p.global() + " " + Arrays.toString(p.destOffset()) + " " + p.bytes() + " " + Arrays.toString(p.replicas());
    }

    @Test
    void aPart_roundTripsThroughTheWireMessage() throws Exception {
        PlanPart p = part();
        assertTrue(p.shards().size() > 10 && !p.values().isEmpty(), "a real plan with shards and values");
        PlanPart back = PlanCodec.decode(WorkerPlan.parseFrom(PlanCodec.encode(p).toByteArray()));
        assertEquals(describe(p), describe(back));
    }

    /** The part with every piece of rank 0 read from a copy of its tree on {@code worker} (device 5 there). */
    private static PlanPart fromCopies(PlanPart p, int worker) {
        List<ShardPlan> shards = p.shards().stream().map(s -> new ShardPlan(s.destRank(), s.destDevice(), s.tensor(),
                s.key(), s.shape(), s.dtype(), s.pieces().stream().map(x -> x.sourceRank() != 0 ? x : new Piece(x.kind(),
                x.sourceRank(), new Device(worker, 5), x.sourceKey(), x.source(), x.global(), x.destOffset(), x.bytes(),
                x.replicas())).toList(), s.padding())).toList();
        return new PlanPart(p.job(), p.planId(), p.worker(), p.step(), p.daemons(), p.sourceDir(), p.outputDir(), shards,
                p.values(), p.generated(), p.sourceDevices(), p.flowRates(), p.participants(), p.coordinator(),
                p.reconfiguration(), p.preparedTimeoutMillis(), p.rebuilding());
    }

    @Test
    void piecesReadFromACopyElsewhere_keepTheirDevice() throws Exception {
        PlanPart p = fromCopies(part(), 1);
        assertTrue(describe(p).contains("w1:d5"), "some piece reads rank 0 from worker 1's copy");
        PlanPart back = PlanCodec.decode(WorkerPlan.parseFrom(PlanCodec.encode(p).toByteArray()));
        assertEquals(describe(p), describe(back));
    }

    @Test
    void aPieceReadOnAWorkerWithoutADaemon_isRefused() {
        WorkerPlan bad = PlanCodec.encode(fromCopies(part(), 2)); // the part names daemons of workers 0 and 1 only
        var e = assertThrows(IllegalArgumentException.class, () -> PlanCodec.decode(bad));
        assertTrue(e.getMessage().contains("source_device on worker 2, which has no daemon address"), e.getMessage());
    }

    @Test
    void rebuildingRanks_roundTrip_andOneWithoutASourceDevice_isRefused() throws Exception {
        PlanPart p = part();
        assertEquals(List.of(1), PlanCodec.decode(WorkerPlan.parseFrom(PlanCodec.encode(p).toByteArray())).rebuilding());
        WorkerPlan bad = PlanCodec.encode(p.withRebuilding(List.of(p.sourceDevices().size())));
        var e = assertThrows(IllegalArgumentException.class, () -> PlanCodec.decode(bad));
        assertTrue(e.getMessage().contains("rebuilding rank " + p.sourceDevices().size() + " is not in [0, "),
                e.getMessage());
    }

    @Test
    void aStatus_roundTrips() {
        PartStatus s = new PartStatus("p7-abc", "prepared", "", 1 << 20, 1 << 19, 100, 200, 3, 1, 123_456_789L,
                "1.0 MB into 1 new shared-memory segment");
        assertEquals(s, PlanCodec.decode(PlanCodec.encode(s)));
    }

    @Test
    void aShardWhoseBytesOverflow_isRefused() {
        WorkerPlan wp = PlanCodec.encode(part());
        WorkerPlan.Builder bad = wp.toBuilder();
        var shard = wp.getShards(0).toBuilder().setShape(0, 1L << 62); // 2^62 elements of 2 bytes (f16)
        for (int d = 1; d < shard.getShapeCount(); d++) {
            shard.setShape(d, 1);
        }
        bad.setShards(0, shard);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PlanCodec.decode(bad.build()));
        assertTrue(e.getMessage().contains("f16[4611686018427387904") && e.getMessage().contains("has more than 2^63 bytes"),
                e.getMessage());
    }

    @Test
    void aPieceWhoseByteCountIsNotItsRegions_isRefused_beforeTheExecutorSizesABufferWithIt() {
        WorkerPlan wp = PlanCodec.encode(part());
        var piece = wp.getShards(0).getPieces(0);
        WorkerPlan.Builder bad = wp.toBuilder();
        bad.setShards(0, wp.getShards(0).toBuilder().setPieces(0, piece.toBuilder().setBytes(Integer.MAX_VALUE)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PlanCodec.decode(bad.build()));
        assertTrue(e.getMessage().contains(": 2147483647 bytes for a region ") && e.getMessage().contains("(" + piece.getBytes()
                + " bytes)"), e.getMessage());
    }

    @Test
    void sourceRanksBeyondTheListedDevices_areRefused_withTheValueNamed() {
        WorkerPlan wp = PlanCodec.encode(part());
        WorkerPlan.Builder bad = wp.toBuilder();
        bad.setShards(0, wp.getShards(0).toBuilder().setPieces(0, wp.getShards(0).getPieces(0).toBuilder().setSourceRank(99)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PlanCodec.decode(bad.build()));
        assertTrue(e.getMessage().contains("source_rank 99 is not in [0, 2)"), e.getMessage());
        WorkerPlan.Builder kind = wp.toBuilder();
        kind.setShards(0, wp.getShards(0).toBuilder().setPieces(0, wp.getShards(0).getPieces(0).toBuilder().setKind(17)));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PlanCodec.decode(kind.build())).getMessage()
                .contains("kind 17"));
    }
}
