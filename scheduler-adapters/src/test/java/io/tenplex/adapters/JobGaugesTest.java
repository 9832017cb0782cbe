package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.prometheus.client.Collector;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.JobRemoval;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The per-job gauges over two simulated daemons (the jobs test-jar's in-memory cluster): the series of
 * a job follow its seals (here and told by the other daemon), its ranks' stop-flag reads and its flag,
 * turn idle 60 s after the last rank was heard from, and go with the job's removal.
 */
class JobGaugesTest {
    private final FakeCluster cluster = new FakeCluster(2);
    private final AtomicLong later = new AtomicLong();
    private final ObjectMapper json = new ObjectMapper();

    @AfterEach
    void close() {
        cluster.close();
    }

    private JobGauges gauges(int worker) {
        return new JobGauges(cluster.jobs(worker), new ResourceChanges(cluster.jobs(worker)),
                () -> System.nanoTime() + later.get());
    }

    /** Every sample as {@code name{label=value,...}} to its value (labels sorted). */
    private static Map<String, Double> scrape(JobGauges g) {
        Map<String, Double> out = new TreeMap<>();
        for (Collector.MetricFamilySamples f : g.collect()) {
            assertEquals(Collector.Type.GAUGE, f.type, f.name);
            for (Collector.MetricFamilySamples.Sample s : f.samples) {
                Map<String, String> labels = new TreeMap<>();
                for (int i = 0; i < s.labelNames.size(); i++) {
                    labels.put(s.labelNames.get(i), s.labelValues.get(i));
                }
                out.put(s.name + labels, s.value);
            }
        }
        return out;
    }

    private static String state(Map<String, Double> m, String job) {
        List<String> on = JobStates.NAMES.stream().filter(s -> m.get("tenplex_job_state{job=" + job + ", state=" + s + "}")
                == 1.0).toList();
        assertEquals(1, on.size(), "one state is 1: " + m);
        return on.get(0);
    }

    private void seal(int worker, int rank) throws Exception {
        JsonNode config = json.readTree("{\"tp\": 1, \"pp\": 1, \"dp\": 2, \"devicesPerWorker\": 1}");
        cluster.jobs(worker).seal("j", 5, rank, 2, config, cluster.daemons()).get(30, TimeUnit.SECONDS);
    }

    @Test
    void aJobsSeries_followItsSavesReadsAndFlag_andGoWithIt() throws Exception {
        JobGauges g0 = gauges(0);
        JobGauges g1 = gauges(1);
        assertEquals(6, g0.collect().size(), "every family is there without jobs");
        assertEquals(Map.of(), scrape(g0));
        seal(0, 0);
        Map<String, Double> m = scrape(g1); // told by worker 0
        assertEquals(5.0, m.get("tenplex_job_step{job=j}"), m.toString());
        assertEquals(-1.0, m.get("tenplex_job_generation{job=j}"));
        assertEquals(null, m.get("tenplex_job_world_size{job=j}"), "no complete generation yet");
        assertEquals("running", state(m, "j"));
        assertEquals(0.0, m.get("tenplex_job_change_pending{job=j}"));
        seal(1, 1);
        for (JobGauges g : List.of(g0, g1)) {
            m = scrape(g);
            assertEquals(5.0, m.get("tenplex_job_generation{job=j}"), m.toString());
            assertEquals(2.0, m.get("tenplex_job_world_size{job=j}"));
            assertEquals(1.0, m.get("tenplex_job_parallelism{dim=tp, job=j}"));
            assertEquals(1.0, m.get("tenplex_job_parallelism{dim=pp, job=j}"));
            assertEquals(2.0, m.get("tenplex_job_parallelism{dim=dp, job=j}"));
        }
        cluster.jobs(1).stopFlags().ask("j", OptionalLong.of(9));
        assertEquals(9.0, scrape(g1).get("tenplex_job_step{job=j}"), "a rank said it finished 9 steps");
        assertEquals(5.0, scrape(g0).get("tenplex_job_step{job=j}"), "its ranks said nothing to worker 0");
        later.set(TimeUnit.SECONDS.toNanos(61));
        assertEquals("idle", state(scrape(g0), "j"));
        cluster.jobs(0).stopFlags().raise("j", OptionalLong.empty(), "by hand");
        m = scrape(g0);
        assertEquals("stopping", state(m, "j"));
        assertEquals(1.0, m.get("tenplex_job_change_pending{job=j}"));
        cluster.jobs(0).stopFlags().clear("j");
        new JobRemoval(cluster.store(0), cluster.jobs(0), cluster.client()).removeHere("j");
        assertEquals(Map.of(), scrape(g0), "a removed job has no series");
        assertTrue(scrape(g1).containsKey("tenplex_job_step{job=j}"), "worker 1 still holds it");
    }
}
