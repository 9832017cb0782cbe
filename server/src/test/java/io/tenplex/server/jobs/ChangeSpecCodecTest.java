package io.tenplex.server.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.control.DeviceRun;
import io.tenplex.server.control.Placement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * A change's definition crosses the wire and comes back equal, small at thousands of devices; a
 * forged one is refused, naming what is wrong, before anything is allocated for it.
 */
class ChangeSpecCodecTest {
    private static final String DIGEST = "ab".repeat(32);

    static ChangeSpec spec(ParallelConfig a, ParallelConfig b, List<Device> from, List<Device> to,
            Map<Integer, List<Integer>> copies) {
        Map<Integer, String> daemons = new TreeMap<>();
        from.forEach(d -> daemons.put(d.worker(), "10.1." + (d.worker() >> 8) + "." + (d.worker() & 255) + ":20010"));
        to.forEach(d -> daemons.put(d.worker(), "10.1." + (d.worker() >> 8) + "." + (d.worker() & 255) + ":20010"));
        List<Integer> participants = to.stream().map(Device::worker).distinct().sorted().toList();
        return new ChangeSpec("gpt", "r1-0123456789abcdef", 1500, DIGEST, new ConfigJson.Placed(a, from),
                new ConfigJson.Placed(b, to), daemons, copies, "gen/1500", 100_000_000_000L, participants,
                "10.1.0.0:20010", 60_000, List.of("01".repeat(32), "02".repeat(32), "03".repeat(32)),
                java.util.stream.IntStream.range(0, from.size()).map(r -> r % 4 - 1).boxed().toList());
    }

    private static ChangeSpec roundTrip(ChangeSpec c) {
        try {
            return ChangeSpecCodec.decode(io.tenplex.server.control.ChangeSpec.parseFrom(
                    ChangeSpecCodec.encode(c).toByteArray()));
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void packedAndScatteredPlacements_comeBackEqual() {
        ParallelConfig a = new ParallelConfig(2, 2, 4, 2, true);
        ParallelConfig b = ParallelConfig.of(4, 1, 2);
        List<Device> scattered = new ArrayList<>(Ptc.packedDevices(8, 3));
        Collections.shuffle(scattered, new Random(5));
        ChangeSpec c = spec(a, b, Ptc.packedDevices(16, 4), scattered, Map.of(3, List.of(7, 9), 0, List.of(2)));
        assertEquals(c, roundTrip(c));
        assertEquals(1, ChangeSpecCodec.encode(c).getFrom().getDevicesCount(), "a packed placement is one run");
        ChangeSpec rebuilt = new ChangeSpec(c.job(), c.changeId(), c.step(), c.modelDigest(), c.from(), c.to(),
                c.daemons(), c.copies(), c.sourceDir(), c.linkRate(), c.participants(), c.coordinator(),
                c.preparedTimeoutMillis(), c.layoutDigests(), c.rankLayouts(), List.of(5, 0, 15));
        assertEquals(rebuilt, roundTrip(rebuilt), "the ranks being rebuilt from parity");
    }

    /** The same change with the workers' addresses by digest. */
    private static ChangeSpec byDigest(ChangeSpec c) {
        return new ChangeSpec(c.job(), c.changeId(), c.step(), c.modelDigest(), c.from(), c.to(), Map.of(), c.copies(),
                c.sourceDir(), c.linkRate(), c.participants(), c.coordinator(), c.preparedTimeoutMillis(),
                c.layoutDigests(), c.rankLayouts(), c.rebuilding(), "cd".repeat(32));
    }

    /**
     * At 4096 and 16384 devices (512 and 2048 workers) the whole definition is under 64 KiB with the
     * addresses in it, and a few KiB with them by digest: packed placements are one run each, and the
     * data-parallel replicas' layouts are those of the first replica.
     */
    @Test
    void aChangeOfThousandsOfDevices_isSmall() {
        for (int dp : new int[] {64, 256}) {
            int devices = 64 * dp;
            ChangeSpec c = spec(ParallelConfig.of(8, 8, dp), ParallelConfig.of(8, 4, 2 * dp),
                    Ptc.packedDevices(devices, 8), Ptc.packedDevices(devices, 8), Map.of());
            c = new ChangeSpec(c.job(), c.changeId(), c.step(), c.modelDigest(), c.from(), c.to(), c.daemons(), c.copies(),
                    c.sourceDir(), c.linkRate(), c.participants(), c.coordinator(), c.preparedTimeoutMillis(),
                    java.util.stream.IntStream.range(0, 64).mapToObj(i -> String.format("%064x", i)).toList(),
                    java.util.stream.IntStream.range(0, devices).map(r -> r % 64).boxed().toList());
            var m = ChangeSpecCodec.encode(c);
            assertTrue(m.getSerializedSize() < 64 * 1024, devices + " devices: " + m.getSerializedSize() + " bytes");
            assertEquals(64, m.getLayoutPeriod());
            assertEquals(64, m.getRankLayoutsCount());
            assertEquals(1, m.getTo().getDevicesCount());
            assertEquals(c, roundTrip(c));
            ChangeSpec d = byDigest(c);
            int bytes = ChangeSpecCodec.encode(d).getSerializedSize();
            assertTrue(bytes < 12 * 1024, devices + " devices, addresses by digest: " + bytes + " bytes");
            assertEquals(d, roundTrip(d));
            assertEquals(c.daemons(), roundTrip(d).withDaemons(c.daemons()).daemons());
        }
    }

    /** Ranks numbered stage by stage: each stage's layout is one run, whatever the number of ranks. */
    @Test
    void layoutsByPipelineStage_areRuns() {
        ChangeSpec c = spec(ParallelConfig.of(8, 8, 256), ParallelConfig.of(8, 4, 512), Ptc.packedDevices(16384, 8),
                Ptc.packedDevices(16384, 8), Map.of());
        List<Integer> stages = java.util.stream.IntStream.range(0, 16384)
                .map(r -> r < 2048 ? 0 : r < 14336 ? 1 : r == 16383 ? -1 : 2).boxed().toList();
        ChangeSpec d = byDigest(new ChangeSpec(c.job(), c.changeId(), c.step(), c.modelDigest(), c.from(), c.to(),
                c.daemons(), c.copies(), c.sourceDir(), c.linkRate(), c.participants(), c.coordinator(),
                c.preparedTimeoutMillis(), c.layoutDigests(), stages));
        var m = ChangeSpecCodec.encode(d);
        assertEquals(List.of(0, 2048, 1, 12288, 2, 2047, -1, 1), m.getRankLayoutRunsList());
        assertEquals(0, m.getRankLayoutsCount());
        assertEquals(d, roundTrip(d));
        assertTrue(m.getSerializedSize() < 6 * 1024, m.getSerializedSize() + " bytes");
    }

    /** Placements that are not packed: runs of workers broken where devices are missing or out of order. */
    @Test
    void placementsWithGaps_comeBackEqual() {
        List<Device> ds = new ArrayList<>(Ptc.packedDevices(64, 8));
        ds.remove(20); // worker 2 lacks local 4: runs break around it
        ds.add(new Device(9, 0));
        ds.add(new Device(9, 1));
        ds.add(new Device(11, 0));
        ds.add(new Device(11, 1));
        ds.add(new Device(12, 0));
        ChangeSpec c = spec(ParallelConfig.of(2, 1, 32), ParallelConfig.of(1, 2, 34), Ptc.packedDevices(64, 8), ds, Map.of());
        assertEquals(c, roundTrip(c));
        assertTrue(ChangeSpecCodec.encode(c).getTo().getDevicesCount() < 10);
    }

    private static String refusal(java.util.function.UnaryOperator<io.tenplex.server.control.ChangeSpec.Builder> forge) {
        ChangeSpec c = spec(ParallelConfig.of(2, 1, 2), ParallelConfig.of(1, 1, 4), Ptc.packedDevices(4, 2),
                Ptc.packedDevices(4, 4), Map.of());
        var m = forge.apply(ChangeSpecCodec.encode(c).toBuilder()).build();
        return assertThrows(IllegalArgumentException.class, () -> ChangeSpecCodec.decode(m)).getMessage();
    }

    private static Placement.Builder runs(int tp, int pp, int dp, DeviceRun... runs) {
        Placement.Builder p = Placement.newBuilder().setTp(tp).setPp(pp).setDp(dp).setEp(1);
        for (DeviceRun r : runs) {
            p.addDevices(r);
        }
        return p;
    }

    private static DeviceRun run(int worker, int local, int count) {
        return DeviceRun.newBuilder().setWorker(worker).setFirstLocal(local).setCount(count).build();
    }

    @Test
    void forgedDefinitions_areRefusedNamingWhat() {
        assertTrue(refusal(b -> b.setTo(runs(65536, 65536, 2, run(0, 0, 1)))).contains("at most 16384 ranks"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(0, 0, Integer.MAX_VALUE)))).contains("places more than"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(0, 0, 2), run(0, 0, 2)))).contains("one device"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(0, 0, 3)))).contains("place 3 ranks of 4"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(0, Integer.MAX_VALUE - 1, 4)))).contains("out of range"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(-1, 0, 4)))).contains("out of range"));
        assertTrue(refusal(b -> b.setTo(runs(0, 1, 4, run(0, 0, 4)))).contains("at least 1"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(0, 0, 4)).setEp(3))).contains("must divide"));
        assertTrue(refusal(b -> b.setModelDigest("xyz")).contains("model digest"));
        assertTrue(refusal(b -> b.setJob("")).contains("job"));
        assertTrue(refusal(b -> b.setJob("j".repeat(301))).contains("at most 300"));
        assertTrue(refusal(b -> b.setStep(-1)).contains("negative"));
        assertTrue(refusal(b -> b.setPreparedTimeoutMillis(Long.MAX_VALUE)).contains("prepared timeout"));
        assertTrue(refusal(b -> b.putDaemons(-5, "x:1")).contains("worker -5"));
        assertTrue(refusal(b -> b.setRankLayouts(0, 3)).contains("index 3 names none"));
        assertTrue(refusal(b -> b.setRankLayouts(0, -2)).contains("index -2"));
        assertTrue(refusal(b -> b.addRankLayouts(0)).contains("5 ranks' layouts"));
        assertTrue(refusal(b -> b.setLayoutDigests(1, "zz")).contains("layout digest"));
        assertTrue(refusal(b -> b.addParticipants(1 << 20)).contains("participant"));
        assertTrue(refusal(b -> b.addRebuilding(4)).contains("rank 4 is not an old rank"));
        assertTrue(refusal(b -> b.addRebuilding(-1)).contains("rank -1 is not an old rank"));
        assertTrue(refusal(b -> b.addRebuilding(1).addRebuilding(1)).contains("listed twice"));
        assertTrue(refusal(b -> b.addAllRebuilding(List.of(0, 1, 2, 3, 0))).contains("5 ranks of 4"));
        assertTrue(refusal(b -> b.addCopies(copies(4, 1, 1))).contains("ranks 4 to 4 are not old ranks"));
        assertTrue(refusal(b -> b.addCopies(copies(1, Integer.MAX_VALUE, 1))).contains("are not old ranks"));
        assertTrue(refusal(b -> b.addCopies(copies(0, 0, 1))).contains("are not old ranks"));
        assertTrue(refusal(b -> b.addCopies(copies(-1, 1, 1))).contains("are not old ranks"));
        assertTrue(refusal(b -> b.addCopies(copies(1, 2, 1)).addCopies(copies(2, 1, 0))).contains("ranks 2 to 2"),
                "runs overlap");
        assertTrue(refusal(b -> b.addCopies(copies(0, 1, -3))).contains("worker -3"));
        assertTrue(refusal(b -> b.addCopies(copies(0, 4, 1, 2, 3, 0, 1))).contains("more than 16 copies"));
        assertTrue(refusal(b -> b.addCopies(copies(0, 1, 1).toBuilder().setRepeat(-1))).contains("are not old ranks"));
        assertTrue(refusal(b -> b.addCopies(copies(0, 1, 1).toBuilder().setRepeat(4))).contains("ranks 0 to 4"));
        assertTrue(refusal(b -> b.addCopies(copies(0, 2, 1).toBuilder().setRepeat(Integer.MAX_VALUE)))
                .contains("are not old ranks"));
        assertTrue(refusal(b -> b.addCopies(copies(0, 1, (1 << 20) - 2).toBuilder().setRepeat(2))).contains("repeated 2"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(0, 0, 2).toBuilder().setWorkers(-1).build())))
                .contains("out of range"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(0, 0, 1).toBuilder().setWorkers(Integer.MAX_VALUE).build())))
                .contains("places more than"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run((1 << 20) - 1, 0, 2).toBuilder().setWorkers(2).build())))
                .contains("out of range"));
        assertTrue(refusal(b -> b.setTo(runs(1, 1, 4, run(0, 0, 2).toBuilder().setWorkers(3).build())))
                .contains("places more than"));
        assertTrue(refusal(b -> b.setLayoutPeriod(3)).contains("does not divide"));
        assertTrue(refusal(b -> b.setLayoutPeriod(4)).contains("does not divide"));
        assertTrue(refusal(b -> b.setLayoutPeriod(-2)).contains("does not divide"));
        assertTrue(refusal(b -> b.setLayoutPeriod(2)).contains("(a period of 2)"));
        assertTrue(refusal(b -> b.clearRankLayouts().addAllRankLayoutRuns(List.of(0, 3))).contains("covering the 4"));
        assertTrue(refusal(b -> b.clearRankLayouts().addAllRankLayoutRuns(List.of(0, 5, 1, -1))).contains("at least 1"));
        assertTrue(refusal(b -> b.clearRankLayouts().addAllRankLayoutRuns(List.of(0, 4, 1))).contains("pairs"));
        assertTrue(refusal(b -> b.addAllRankLayoutRuns(List.of(0, 4))).contains("in place of a list"));
        assertTrue(refusal(b -> b.clearRankLayouts().addAllRankLayoutRuns(List.of(0, Integer.MAX_VALUE, 0,
                Integer.MAX_VALUE, 0, 4))).contains("covering the 4"));
        assertTrue(refusal(b -> b.clearRankLayouts().addAllRankLayoutRuns(List.of(7, 4))).contains("index 7 names none"));
        assertTrue(refusal(b -> b.setDaemonsDigest("cd".repeat(32))).contains("both by digest and in the definition"));
        assertTrue(refusal(b -> b.clearDaemons().setDaemonsDigest("x")).contains("daemons digest"));
        assertTrue(refusal(b -> b.setUnknownFields(com.google.protobuf.UnknownFieldSet.newBuilder().addField(8,
                com.google.protobuf.UnknownFieldSet.Field.newBuilder().addLengthDelimited(com.google.protobuf.ByteString
                        .copyFromUtf8("x")).build()).build())).contains("another version"));
    }

    private static io.tenplex.server.control.CopyRun copies(int first, int count, int... workers) {
        var r = io.tenplex.server.control.CopyRun.newBuilder().setFirstRank(first).setCount(count);
        for (int w : workers) {
            r.addWorkers(w);
        }
        return r.build();
    }

    /**
     * A recovery's definition: every rank's partner copy on the next worker of the ring is two runs (the
     * ring, and its wrap), so 4096 devices stay under 64 KiB; ranks with other copies, or none, break the runs.
     */
    @Test
    void everyRanksPartnerCopies_areRunsPerWorker() {
        Map<Integer, List<Integer>> ring = new TreeMap<>();
        for (int r = 0; r < 4096; r++) {
            ring.put(r, List.of((r / 8 + 1) % 512));
        }
        ChangeSpec c = spec(ParallelConfig.of(8, 8, 64), ParallelConfig.of(8, 8, 63), Ptc.packedDevices(4096, 8),
                Ptc.packedDevices(4032, 8), ring);
        var m = ChangeSpecCodec.encode(c);
        assertEquals(2, m.getCopiesCount(), "the ring, and its wrap to worker 0");
        assertTrue(m.getSerializedSize() < 64 * 1024, m.getSerializedSize() + " bytes");
        assertEquals(c, roundTrip(c));
        Map<Integer, List<Integer>> gaps = new TreeMap<>(ring);
        gaps.remove(9);
        gaps.put(17, List.of(3, 4));
        ChangeSpec d = spec(ParallelConfig.of(8, 8, 64), ParallelConfig.of(8, 8, 63), Ptc.packedDevices(4096, 8),
                Ptc.packedDevices(4032, 8), gaps);
        // the runs broken around ranks 9 and 17: [0,8) on 1; 8; [10,16) on 2; 16; 17 on 3 and 4; [18,24); then the ring
        assertEquals(8, ChangeSpecCodec.encode(d).getCopiesCount());
        assertEquals(d, roundTrip(d));
    }
}
