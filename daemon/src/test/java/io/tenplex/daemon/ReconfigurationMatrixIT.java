package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Reconfigurations between four real daemon processes on loopback (one per worker): data, tensor
 * and pipeline parallelism changes, a combined one, scaling up and down, and redeployment to a
 * disjoint set of workers. Every new shard is compared byte for byte with direct sharding of the
 * same tensors, and the plan's inter-worker bytes must equal the network lower bound.
 */
class ReconfigurationMatrixIT {
    private static final Model MODEL = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16), 2);
    private static ProcessCluster cluster;

    @BeforeAll
    static void start() throws Exception {
        cluster = new ProcessCluster(MODEL);
        for (int w = 0; w < 4; w++) {
            cluster.start();
        }
    }

    @AfterAll
    static void stop() throws Exception {
        cluster.close();
    }

    private static ParallelConfig config(String tpd) {
        String[] p = tpd.split("/");
        return ParallelConfig.of(Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2]));
    }

    @ParameterizedTest(name = "{0}: {1} on {2}x from {3} -> {4} on {5}x from {6}")
    @CsvSource({
        "dp-up,       2/2/1, 2, 0, 2/2/2, 2, 0",
        "tp-up,       2/2/1, 2, 0, 4/2/1, 4, 0",
        "pp-up,       2/2/1, 4, 0, 2/4/1, 4, 0",
        "combined,    4/2/1, 2, 0, 2/2/2, 2, 0",
        "scale-down,  2/2/2, 2, 0, 2/2/1, 4, 0",
        "disjoint,    2/2/1, 2, 0, 2/2/1, 2, 2",
    })
    void reconfiguration_isByteExact(String job, String a, int perA, int firstA, String b, int perB, int firstB)
            throws Exception {
        run(job, a, perA, firstA, b, perB, firstB, "");
    }

    /**
     * The same changes with every daemon planning its own part from the change's definition (issue 42):
     * as byte-exact, with the same bytes, and each daemon's plan digest the same.
     */
    @ParameterizedTest(name = "{0}: {1} on {2}x from {3} -> {4} on {5}x from {6}, planned by every daemon")
    @CsvSource({
        "dp-up-local,       2/2/1, 2, 0, 2/2/2, 2, 0",
        "tp-up-local,       2/2/1, 2, 0, 4/2/1, 4, 0",
        "pp-up-local,       2/2/1, 4, 0, 2/4/1, 4, 0",
        "combined-local,    4/2/1, 2, 0, 2/2/2, 2, 0",
        "scale-down-local,  2/2/2, 2, 0, 2/2/1, 4, 0",
        "disjoint-local,    2/2/1, 2, 0, 2/2/1, 2, 2",
    })
    void plannedByEveryDaemon_isByteExact(String job, String a, int perA, int firstA, String b, int perB, int firstB)
            throws Exception {
        JsonNode r = run(job, a, perA, firstA, b, perB, firstB, ", \"planning\": \"local\"");
        assertTrue(r.path("mode").asText().contains("each daemon planning its own part"), r.toString());
    }

    private static java.net.http.HttpResponse<byte[]> call(String method, String path, byte[] body) throws Exception {
        return cluster.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(cluster.daemons.get(0).url() + path))
                .header("Content-Type", "application/octet-stream")
                .method(method, java.net.http.HttpRequest.BodyPublishers.ofByteArray(body)));
    }

    private static String text(java.net.http.HttpResponse<byte[]> r) {
        return new String(r.body(), java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * The routes a coordinator uses to hand a daemon a change's definition, asked as a hostile client
     * would: a description whose bytes are not what its digest names, a garbled or forged definition, a
     * definition posted to another job or without its worker: each a 400 naming what is wrong, and
     * nothing started; a valid one naming descriptions the daemon lacks is a 409 listing them.
     */
    @org.junit.jupiter.api.Test
    void changeRoutes_refuseWhatTheyCannotKeep() throws Exception {
        String d = "ab".repeat(32);
        var r = call("PUT", "/api/v1/jobs/h/descriptions/" + d, "not those bytes".getBytes());
        assertEquals(400, r.statusCode(), text(r));
        assertTrue(text(r).contains("do not have the digest"), text(r));
        r = call("PUT", "/api/v1/jobs/h/descriptions/xyz", new byte[1]);
        assertEquals(400, r.statusCode(), text(r));
        r = call("POST", "/api/v1/jobs/h/changes?worker=0", "garbage".getBytes());
        assertEquals(400, r.statusCode(), text(r));
        var spec = new io.tenplex.jobs.common.ChangeSpec("h", "c1", 3, d, new io.tenplex.jobs.common.ConfigJson.Placed(
                ParallelConfig.of(1, 1, 2), Ptc.packedDevices(2, 1)), new io.tenplex.jobs.common.ConfigJson.Placed(
                        ParallelConfig.of(1, 1, 1), Ptc.packedDevices(1, 1)), Map.of(0, "127.0.0.1:1"), Map.of(), "save",
                0, java.util.List.of(0), "", 1000, java.util.List.of("cd".repeat(32)), java.util.List.of(0, -1));
        byte[] body = io.tenplex.server.jobs.ChangeSpecCodec.encode(spec).toByteArray();
        r = call("POST", "/api/v1/jobs/h/changes", body);
        assertEquals(400, r.statusCode(), text(r));
        assertTrue(text(r).contains("?worker=N"), text(r));
        r = call("POST", "/api/v1/jobs/other/changes?worker=0", body);
        assertEquals(400, r.statusCode(), text(r));
        var forged = io.tenplex.server.jobs.ChangeSpecCodec.encode(spec).toBuilder().setTo(io.tenplex.server.control
                .Placement.newBuilder().setTp(1).setPp(1).setDp(4).setEp(1).addDevices(io.tenplex.server.control.DeviceRun
                        .newBuilder().setCount(Integer.MAX_VALUE))).build().toByteArray();
        r = call("POST", "/api/v1/jobs/h/changes?worker=0", forged);
        assertEquals(400, r.statusCode(), text(r));
        assertTrue(text(r).contains("places more than"), text(r));
        r = call("POST", "/api/v1/jobs/h/changes?worker=0", body);
        assertEquals(409, r.statusCode(), text(r));
        var answer = io.tenplex.server.control.ChangeAnswer.parseFrom(r.body());
        assertEquals(java.util.List.of(d, "cd".repeat(32)), answer.getMissingList());
        assertTrue(!answer.hasStatus());
        r = call("GET", "/api/v1/jobs/h/parts/c1", new byte[0]);
        assertEquals(404, r.statusCode(), "nothing was started: " + text(r));
    }

    private static JsonNode run(String job, String a, int perA, int firstA, String b, int perB, int firstB, String more)
            throws Exception {
        ParallelConfig from = config(a);
        ParallelConfig to = config(b);
        Ptc fromPtc = Ptc.packed(MODEL, from, perA);
        Map<String, byte[]> full = cluster.save(job, fromPtc, firstA);
        JsonNode r = cluster.await(cluster.reconfigure(job, ProcessCluster.config(from, perA, firstA),
                ProcessCluster.config(to, perB, firstB), cluster.addresses(), 7, more));
        assertEquals("committed", r.get("state").asText(), r.toString());
        assertEquals(r.at("/report/lowerBoundBytes").asLong(), r.at("/report/interWorkerBytes").asLong(), r.toString());
        cluster.assertLoaded(job, cluster.daemons, Ptc.packed(MODEL, to, perB), firstB, full);
        if (job.startsWith("disjoint")) { // nothing was kept: every byte crossed to workers 2 and 3
            assertTrue(r.at("/workers/2/remoteBytes").asLong() > 0 && r.at("/workers/3/remoteBytes").asLong() > 0,
                    r.toString());
            assertEquals(0, r.at("/report/keptBytes").asLong(), r.toString());
        }
        return r;
    }
}
