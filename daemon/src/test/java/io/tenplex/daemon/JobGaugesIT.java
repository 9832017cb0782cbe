package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.adapters.ResourceChange;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The per-job gauges of {@code /metrics} on a real daemon over HTTP, scraped after each step of a job's
 * life: created empty (idle), a first rank saved (running, no generation yet), both saved (the newest
 * generation with its world size and parallelism), ranks reading the stop flag with a step (both routes),
 * a resource change waiting for the save (stopping, pending) and cancelled (its final state, until a rank
 * saves again), and removed (its series gone while another job's stay). Each scrape parses as strict
 * Prometheus text, and the state and dim labels take only their fixed values.
 */
class JobGaugesIT {
    private static final String CONFIG = "{\"tp\": 1, \"pp\": 1, \"dp\": 2, \"devicesPerWorker\": 2}";
    private static final List<String> FAMILIES = List.of("tenplex_job_step", "tenplex_job_generation",
            "tenplex_job_world_size", "tenplex_job_parallelism", "tenplex_job_change_pending", "tenplex_job_state");
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();
    private Daemon daemon;
    private String base;

    @BeforeEach
    void start() throws Exception {
        daemon = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null));
        base = "http://127.0.0.1:" + daemon.address().getPort();
    }

    @AfterEach
    void stop() {
        daemon.close();
    }

    private HttpResponse<String> send(String method, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> ok(String method, String path, String body, int status) throws Exception {
        HttpResponse<String> r = send(method, path, body);
        assertEquals(status, r.statusCode(), method + " " + path + ": " + r.body());
        return r;
    }

    /** Rank {@code rank} of job g writes its state (once) and seals step {@code step} of a world of 2. */
    private void save(long step, int rank) throws Exception {
        if (step == 10) {
            ok("PUT", "/api/v1/tensors/job/g/save/" + rank + "/w?dtype=float32&dims=2", "abcdefgh", 201);
        }
        ok("POST", "/api/v1/jobs/g/saves/" + step + "/ranks/" + rank, "{\"world\": 2, \"config\": " + CONFIG + "}", 200);
    }

    /** The per-job series of a strict scrape as {@code family{label=value, ...}} (labels but job sorted) to value. */
    private Map<String, Double> scrape(String job) throws Exception {
        Map<String, PromText.Family> m = PromText.parse(ok("GET", "/metrics", null, 200).body());
        Map<String, Double> out = new TreeMap<>();
        for (String name : FAMILIES) {
            PromText.Family f = m.get(name);
            assertTrue(f != null && f.type().equals("gauge"), name + " is served as a gauge: " + m.keySet());
            for (PromText.Sample s : f.samples()) {
                assertTrue(s.labels().containsKey("job"), s.toString());
                if (s.labels().get("job").equals(job)) {
                    Map<String, String> rest = new TreeMap<>(s.labels());
                    rest.remove("job");
                    out.put(s.name() + rest, s.value());
                }
            }
        }
        return out;
    }

    /** The states the daemon shows: every resource-change state but done, then running and idle. */
    private static Set<String> stateNames() {
        Set<String> out = new TreeSet<>(Set.of("running", "idle"));
        for (ResourceChange.State s : ResourceChange.State.values()) {
            if (s != ResourceChange.State.DONE) {
                out.add(s.name().toLowerCase(Locale.ROOT));
            }
        }
        return out;
    }

    /** The one state whose series is 1, checking that the job has one series per state name, all 0 or 1. */
    private static String state(Map<String, Double> m) {
        List<String> on = new ArrayList<>();
        Set<String> seen = new TreeSet<>();
        m.forEach((k, v) -> {
            if (k.startsWith("tenplex_job_state{state=")) {
                String s = k.substring("tenplex_job_state{state=".length(), k.length() - 1);
                seen.add(s);
                assertTrue(v == 0.0 || v == 1.0, k + " " + v);
                if (v == 1.0) {
                    on.add(s);
                }
            }
        });
        assertEquals(stateNames(), seen, "a fixed set of states: " + m);
        assertEquals(1, on.size(), "exactly one state is 1: " + m);
        return on.get(0);
    }

    private static void assertProgress(Map<String, Double> m, double step, double generation, String state) {
        assertEquals(step, m.get("tenplex_job_step{}"), "step: " + m);
        assertEquals(generation, m.get("tenplex_job_generation{}"), "generation: " + m);
        assertEquals(state, state(m), "state: " + m);
        boolean pending = state.equals("stopping") || state.equals("reconfiguring");
        assertEquals(pending ? 1.0 : 0.0, m.get("tenplex_job_change_pending{}"), "pending: " + m);
    }

    @Test
    void aJobsGauges_followItsSavesReadsAndChange_andGoWithTheJob() throws Exception {
        ok("PUT", "/api/v1/dirs/job/other", null, 201);
        ok("PUT", "/api/v1/dirs/job/g", null, 201);
        Map<String, Double> m = scrape("g");
        assertProgress(m, -1, -1, "idle");
        assertNull(m.get("tenplex_job_world_size{}"), "no complete generation: no world size");
        assertTrue(m.keySet().stream().noneMatch(k -> k.startsWith("tenplex_job_parallelism")), m.toString());

        save(10, 0);
        m = scrape("g");
        assertProgress(m, 10, -1, "running");
        assertNull(m.get("tenplex_job_world_size{}"), "one rank of two saved: " + m);
        save(10, 1);
        m = scrape("g");
        assertProgress(m, 10, 10, "running");
        assertEquals(2.0, m.get("tenplex_job_world_size{}"), m.toString());
        assertEquals(1.0, m.get("tenplex_job_parallelism{dim=tp}"), m.toString());
        assertEquals(1.0, m.get("tenplex_job_parallelism{dim=pp}"), m.toString());
        assertEquals(2.0, m.get("tenplex_job_parallelism{dim=dp}"), m.toString());
        assertEquals(3, m.keySet().stream().filter(k -> k.startsWith("tenplex_job_parallelism")).count(), m.toString());

        ok("GET", "/api/v1/jobs/g/stop?step=12", null, 200);
        assertProgress(scrape("g"), 12, 10, "running");
        assertEquals("run", ok("GET", "/stop?job=g&step=13", null, 200).body());
        assertProgress(scrape("g"), 13, 10, "running");

        String change = json.readTree(ok("POST", "/api/v1/jobs/g/resources", "{\"devices\": [[0,0]], \"config\": "
                + "{\"tp\": 1, \"pp\": 1, \"dp\": 1}}", 202).body()).path("status").asText();
        assertProgress(scrape("g"), 13, 10, "stopping");
        assertEquals("stop", ok("GET", "/stop?job=g&step=14", null, 200).body());
        assertProgress(scrape("g"), 14, 10, "stopping");
        JsonNode ended = json.readTree(ok("DELETE", change, null, 200).body());
        String finalState = ended.path("state").asText();
        assertTrue(stateNames().contains(finalState) && !finalState.equals("stopping"), ended.toString());
        ok("GET", "/api/v1/jobs/g/stop?step=15", null, 200); // ranks read on: the change's end stays the state
        assertProgress(scrape("g"), 15, 10, finalState);
        assertEquals(1.0, scrape("g").get("tenplex_job_state{state=" + finalState + "}"));

        save(20, 0);
        save(20, 1);
        m = scrape("g");
        assertProgress(m, 20, 20, "running");
        assertEquals(2.0, m.get("tenplex_job_world_size{}"));

        assertFalse(scrape("other").isEmpty(), "the other job has its series");
        ok("DELETE", "/api/v1/jobs/g", null, 200);
        assertEquals(Map.of(), scrape("g"), "a removed job's series are gone");
        assertProgress(scrape("other"), -1, -1, "idle");
    }
}
