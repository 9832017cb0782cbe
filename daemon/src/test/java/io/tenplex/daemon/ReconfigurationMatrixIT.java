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

    /**
     * Every daemon plans its own part from the change's definition (issue 42): byte-exact, the bytes
     * between workers the lower bound, and each daemon's plan digest the same (else the change aborts).
     */
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
        JsonNode r = run(job, a, perA, firstA, b, perB, firstB, "");
        assertEquals("peer-to-peer, each daemon planning its own part", r.path("mode").asText(), r.toString());
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
