package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.reconfigure.Descriptions;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Placement;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.server.control.ChangeAnswer;
import io.tenplex.server.jobs.ChangeSpecCodec;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The routes a coordinator uses to hand a daemon a change's definition, asked of a real daemon as a
 * hostile client would: each malformed, forged or oversized definition or description is a clear 4xx
 * with nothing started, and the daemon keeps answering.
 */
class ChangeRoutesIT {
    private static final Model MODEL = new Model(List.of(new TensorSpec("w", DType.F32, Shape.of(8, 4), Placement.layer(0),
            new Partition.Split(0, 1))), List.of(), 1);
    private static ProcessCluster cluster;

    @BeforeAll
    static void start() throws Exception {
        cluster = new ProcessCluster(MODEL);
        cluster.start();
    }

    @AfterAll
    static void stop() throws Exception {
        cluster.close();
    }

    private static HttpResponse<byte[]> call(String method, String path, byte[] body) throws Exception {
        return cluster.send(HttpRequest.newBuilder(URI.create(cluster.daemons.get(0).url() + path))
                .header("Content-Type", "application/octet-stream").method(method, HttpRequest.BodyPublishers.ofByteArray(body)));
    }

    private static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    /** Keeps a description on the daemon; its digest. */
    private static String describe(byte[] bytes) throws Exception {
        String d = Descriptions.digest(bytes);
        var r = call("PUT", "/api/v1/jobs/h/descriptions/" + d, bytes);
        assertEquals(204, r.statusCode(), text(r));
        return d;
    }

    private static ChangeSpec spec(String id, String model, ParallelConfig a, List<Device> from, ParallelConfig b,
            List<Device> to, List<String> layouts, List<Integer> byRank) {
        List<Integer> participants = to.stream().map(Device::worker).distinct().sorted().toList();
        return new ChangeSpec("h", id, 3, model, new ConfigJson.Placed(a, from), new ConfigJson.Placed(b, to),
                Map.of(0, "127.0.0.1:1"), Map.of(), "save", 0, participants, "", 1000, layouts, byRank);
    }

    private static HttpResponse<byte[]> post(ChangeSpec spec, int worker, UnaryOperator<io.tenplex.server.control
            .ChangeSpec.Builder> forge) throws Exception {
        return call("POST", "/api/v1/jobs/h/changes?worker=" + worker, forge.apply(ChangeSpecCodec.encode(spec).toBuilder())
                .build().toByteArray());
    }

    private static void assertRefused(HttpResponse<byte[]> r, int status, String part) {
        assertEquals(status, r.statusCode(), text(r));
        assertTrue(text(r).contains(part), "'" + part + "' not in: " + text(r));
    }

    private ChangeSpec small(String id) throws Exception {
        String model = describe(Descriptions.model(MODEL));
        return spec(id, model, ParallelConfig.of(1, 1, 1), Ptc.packedDevices(1, 1), ParallelConfig.of(1, 1, 1),
                Ptc.packedDevices(1, 1), List.of(), List.of(-1));
    }

    @Test
    void descriptionsAndDefinitions_thatCannotBeKept_areRefused() throws Exception {
        String d = "ab".repeat(32);
        assertRefused(call("PUT", "/api/v1/jobs/h/descriptions/" + d, "not those bytes".getBytes()), 400,
                "do not have the digest");
        assertRefused(call("PUT", "/api/v1/jobs/h/descriptions/xyz", new byte[1]), 400, "64 lowercase hex");
        assertEquals(400, call("POST", "/api/v1/jobs/h/changes?worker=0", "garbage".getBytes()).statusCode());
        ChangeSpec c = small("c1");
        byte[] body = ChangeSpecCodec.encode(c).toByteArray();
        assertRefused(call("POST", "/api/v1/jobs/h/changes", body), 400, "?worker=N");
        assertRefused(call("POST", "/api/v1/jobs/other/changes?worker=0", body), 400, "posted to job other");
        assertRefused(post(c, 5, b -> b), 400, "not a participant");
        assertRefused(post(c, 0, b -> b.setChangeId("a/b")), 400, "change id");
        assertRefused(post(c, 0, b -> b.setChangeId("..")), 400, "change id");
        assertRefused(post(c, 0, b -> b.setSourceDir("../other")), 400, "source dir");
        assertRefused(post(c, 0, b -> b.addParticipants(7)), 400, "participant 7");
        assertRefused(post(c, 0, b -> b.setTo(io.tenplex.server.control.Placement.newBuilder().setTp(1).setPp(1).setDp(4)
                .setEp(1).addDevices(io.tenplex.server.control.DeviceRun.newBuilder().setCount(Integer.MAX_VALUE)))), 400,
                "places more than");
        String missing = "cd".repeat(32);
        var r = post(c, 0, b -> b.addLayoutDigests(missing).setRankLayouts(0, 0));
        assertEquals(409, r.statusCode(), text(r));
        assertEquals(List.of(missing), ChangeAnswer.parseFrom(r.body()).getMissingList());
        assertEquals(404, call("GET", "/api/v1/jobs/h/parts/c1", new byte[0]).statusCode(), "nothing was started");
        assertRefused(call("POST", "/api/v1/jobs/h/reconfigure", ("{\"to\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, "
                + "\"devicesPerWorker\": 1}, \"central\": true, \"planning\": \"local\"}").getBytes(StandardCharsets.UTF_8)),
                400, "central mode");
        assertRefused(call("POST", "/api/v1/jobs/h/reconfigure", ("{\"to\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, "
                + "\"devicesPerWorker\": 1}, \"planning\": \"everywhere\"}").getBytes(StandardCharsets.UTF_8)), 400,
                "must be \"local\"");
        assertRefused(call("POST", "/api/v1/jobs/h/reconfigure", ("{\"to\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, "
                + "\"devicesPerWorker\": 1}, \"planning\": \"central\"}").getBytes(StandardCharsets.UTF_8)), 400,
                "\"planning\": \"central\" is no more");
        assertRefused(call("POST", "/api/v1/jobs/h/reconfigure", ("{\"to\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, "
                + "\"devicesPerWorker\": 1}, \"central\": true, \"centralWorker\": -1}").getBytes(StandardCharsets.UTF_8)),
                400, "centralWorker");
    }

    private static HttpResponse<byte[]> digests(String json) throws Exception {
        return call("POST", "/api/v1/jobs/h/digests", json.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The digests of saved values a change compares: what is saved, digested where it is (SHA-256 over
     * its kind and bytes); a request that names what cannot be a rank's value is a 400, a value that
     * is not there a 404 naming it.
     */
    @Test
    void valueDigests_answerWhatIsSaved_hostileRequestsAreRefused() throws Exception {
        byte[] v = "epoch 7, an odd-sized value".getBytes(StandardCharsets.UTF_8);
        var put = call("PUT", "/api/v1/files/job/h/save/0/scheduler/last_epoch", v);
        assertEquals(2, put.statusCode() / 100, text(put));
        var r = digests("{\"sourceDir\": \"save\", \"values\": {\"0\": [\"scheduler/last_epoch\"]}}");
        assertEquals(200, r.statusCode(), text(r));
        java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
        md.update("file\n".getBytes(StandardCharsets.UTF_8));
        assertEquals(java.util.HexFormat.of().formatHex(md.digest(v)), new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(r.body()).at("/digests/0/scheduler~1last_epoch").asText(), text(r));
        assertRefused(digests("{\"sourceDir\": \"save\", \"values\": {\"0\": [\"nope\"]}}"), 404, "rank 0's 'nope'");
        assertRefused(digests("{\"sourceDir\": \"../x\", \"values\": {}}"), 400, "plain names");
        assertRefused(digests("{\"sourceDir\": \"save\", \"values\": {\"0\": [\"../../1/x\"]}}"), 400, "plain names");
        assertRefused(digests("{\"sourceDir\": \"save\", \"values\": {\"0\": [\"/abs\"]}}"), 400, "plain names");
        assertRefused(digests("{\"sourceDir\": \"save\", \"values\": {\"99999\": [\"x\"]}}"), 400, "ranks must be");
        assertRefused(digests("{\"sourceDir\": \"save\", \"values\": {\"-1\": [\"x\"]}}"), 400, "ranks must be");
        assertRefused(digests("{\"sourceDir\": \"save\", \"values\": {\"00\": [\"x\"]}}"), 400, "ranks must be");
        assertRefused(digests("{\"sourceDir\": \"save\", \"values\": {\"0\": \"x\"}}"), 400, "list of paths");
        assertRefused(digests("{\"sourceDir\": \"save\", \"values\": {\"0\": [7]}}"), 400, "must be a string");
        assertRefused(digests("{\"sourceDir\": \"save\"}"), 400, "digests needs");
        assertRefused(digests("not json"), 400, "");
        StringBuilder many = new StringBuilder("{\"sourceDir\": \"save\", \"values\": {\"0\": [");
        for (int i = 0; i <= io.tenplex.jobs.reconfigure.ValueDigests.MAX_PATHS; i++) {
            many.append(i > 0 ? "," : "").append("\"v").append(i).append('"');
        }
        assertRefused(digests(many.append("]}}").toString()), 400, "at most 65536");
        assertRefused(call("GET", "/api/v1/jobs/h/digests", new byte[0]), 405, "POST");
        assertEquals(200, call("GET", "/api/v1/health", new byte[0]).statusCode(), "the daemon still answers");
    }

    @Test
    void hostileDescriptions_areRefusedWhenPlanned() throws Exception {
        String shapeObject = describe(("{\"layers\": 1, \"tensors\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": "
                + "{\"a\": 1}, \"layer\": 0, \"partition\": {\"kind\": \"replicated\"}}]}").getBytes(StandardCharsets.UTF_8));
        ChangeSpec c = small("c2");
        assertRefused(post(c, 0, b -> b.setModelDigest(shapeObject)), 400, "shape must be a list");
        String huge = describe(("{\"layers\": 1, \"tensors\": [{\"name\": \"w\", \"dtype\": \"i8\", \"shape\": "
                + "[4611686018427387904], \"layer\": 0, \"partition\": {\"kind\": \"replicated\"}}]}")
                .getBytes(StandardCharsets.UTF_8));
        ChangeSpec over = spec("c3", huge, ParallelConfig.of(1, 1, 1), Ptc.packedDevices(1, 1), ParallelConfig.of(1, 1, 2),
                Ptc.packedDevices(2, 1), List.of(), List.of(-1));
        var r = post(over, 0, b -> b);
        assertEquals(400, r.statusCode(), text(r));
        String layout = describe("[[\"w\", true, 2, \"f32\", [8, 4]]]".getBytes(StandardCharsets.UTF_8));
        ChangeSpec two = spec("c6", c.modelDigest(), ParallelConfig.of(1, 1, 2), Ptc.packedDevices(2, 2),
                ParallelConfig.of(1, 1, 1), Ptc.packedDevices(1, 1), List.of(layout, layout), List.of(0, 0));
        assertRefused(post(two, 0, b -> b), 400, "listed twice");
        assertEquals(200, call("GET", "/api/v1/health", new byte[0]).statusCode());
    }

    /** 16384 old ranks of T = 16384, each on its own worker: the planner's holder indexes would not fit the heap. */
    @Test
    void aChangeWhoseIndexesWouldNotFit_isRefusedBeforePlanning() throws Exception {
        String model = describe(("{\"layers\": 1, \"tensors\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": "
                + "[16384], \"layer\": 0, \"partition\": {\"kind\": \"split\", \"dim\": 0}}]}").getBytes(StandardCharsets.UTF_8));
        List<Device> spread = new ArrayList<>();
        for (int w = 0; w < 16384; w++) {
            spread.add(new Device(w, 0));
        }
        ChangeSpec c = spec("c4", model, ParallelConfig.of(16384, 1, 1), spread, ParallelConfig.of(1, 1, 1),
                Ptc.packedDevices(1, 1), List.of(), Collections.nCopies(16384, -1));
        assertRefused(post(c, 0, b -> b), 400, "planner's limit");
        assertEquals(200, call("GET", "/api/v1/health", new byte[0]).statusCode());
    }

    /** A coordinator's retry is answered as before; the same id with another definition is a conflict. */
    @Test
    void aChangePostedAgain_isAnsweredAsBefore_anotherDefinitionIsAConflict() throws Exception {
        String layout = describe("[[\"w\", true, 2, \"f32\", [8, 4]]]".getBytes(StandardCharsets.UTF_8));
        ChangeSpec c = spec("c5", small("x").modelDigest(), ParallelConfig.of(1, 1, 1), Ptc.packedDevices(1, 1),
                ParallelConfig.of(1, 1, 1), Ptc.packedDevices(1, 1), List.of(layout), List.of(0));
        var first = post(c, 0, b -> b);
        assertEquals(202, first.statusCode(), text(first));
        var again = post(c, 0, b -> b);
        assertEquals(202, again.statusCode(), text(again));
        assertEquals(ChangeAnswer.parseFrom(first.body()).getPlanDigest(), ChangeAnswer.parseFrom(again.body())
                .getPlanDigest());
        assertRefused(post(c, 0, b -> b.setStep(99)), 409, "another definition");
    }

    /**
     * A change posted ahead is planned and kept, nothing started; the change then uses that part (the
     * same plan digest) and the addresses it names by digest; another route under it is a 404.
     */
    @Test
    void aChangePlannedAhead_isKeptNotStarted_andTheChangeUsesIt() throws Exception {
        String layout = describe("[[\"w\", true, 2, \"f32\", [8, 4]]]".getBytes(StandardCharsets.UTF_8));
        ChangeSpec c = spec("c6", small("y").modelDigest(), ParallelConfig.of(1, 1, 1), Ptc.packedDevices(1, 1),
                ParallelConfig.of(1, 1, 1), Ptc.packedDevices(1, 1), List.of(layout), List.of(0));
        byte[] addresses = Descriptions.addresses(c.daemons());
        ChangeSpec byDigest = new ChangeSpec(c.job(), c.changeId(), c.step(), c.modelDigest(), c.from(), c.to(), Map.of(),
                c.copies(), c.sourceDir(), c.linkRate(), c.participants(), c.coordinator(), c.preparedTimeoutMillis(),
                c.layoutDigests(), c.rankLayouts(), List.of(), Descriptions.digest(addresses));
        byte[] body = ChangeSpecCodec.encode(byDigest).toByteArray();
        assertRefused(call("POST", "/api/v1/jobs/h/changes/later?worker=0", body), 404, "no route");
        assertRefused(call("PUT", "/api/v1/jobs/h/changes/ahead?worker=0", body), 405, "POST");
        assertRefused(call("POST", "/api/v1/jobs/h/changes/ahead?worker=5", body), 400, "not a participant");
        var ahead = call("POST", "/api/v1/jobs/h/changes/ahead?worker=0", body);
        assertEquals(200, ahead.statusCode(), text(ahead));
        String planned = ChangeAnswer.parseFrom(ahead.body()).getPlanDigest();
        assertTrue(planned.matches("[0-9a-f]{64}"), planned);
        assertEquals(404, call("GET", "/api/v1/jobs/h/parts/c6", new byte[0]).statusCode(), "nothing was started");
        var lacking = post(byDigest, 0, b -> b);
        assertEquals(409, lacking.statusCode(), text(lacking));
        assertEquals(List.of(Descriptions.digest(addresses)), ChangeAnswer.parseFrom(lacking.body()).getMissingList());
        describe(addresses);
        var started = post(byDigest, 0, b -> b);
        assertEquals(202, started.statusCode(), text(started));
        assertEquals(planned, ChangeAnswer.parseFrom(started.body()).getPlanDigest());
    }
}
