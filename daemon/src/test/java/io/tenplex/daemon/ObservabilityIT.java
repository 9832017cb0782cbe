package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.jobs.JobRoutes;
import io.tenplex.server.peer.DaemonLink;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What an operator sees of a job's lifecycle on a real tenplexd process started with
 * {@code --log-format json --log-level debug}: a save of two ranks, a reconfiguration, a resource
 * change that recovers onto one device and one that is cancelled while it waits. Every lifecycle
 * line is one JSON object with its job, step and duration as fields; {@code /metrics} parses as
 * strict Prometheus text and holds the lifecycle's families.
 */
class ObservabilityIT {
    private static final ParallelConfig FROM = ParallelConfig.of(1, 1, 2);
    private final Model model = MegatronLayout.model(MegatronLayout.Shape.gpt(2, 32, 4, 100, 8));
    private final ProcessCluster cluster = new ProcessCluster(model, DaemonLink.plain(null), "--log-format", "json",
            "--log-level", "debug");
    private final ObjectMapper json = new ObjectMapper();
    private DaemonProcess d;

    @AfterEach
    void stop() throws Exception {
        cluster.close();
    }

    private HttpResponse<byte[]> send(String method, String path, String body) throws Exception {
        return cluster.send(HttpRequest.newBuilder(URI.create(d.url() + path)).method(method,
                body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)));
    }

    private String text(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    /** Saves generation 10 of job j (ranks 0 and 1 on worker 0), then reconfigures it to (1,1,1) as step 11. */
    private void saveAndReconfigure() throws Exception {
        cluster.save("j", Ptc.packed(model, FROM, 2), 0);
        for (int rank = 0; rank < 2; rank++) {
            HttpResponse<byte[]> r = send("POST", JobRoutes.PREFIX + "j/saves/10/ranks/" + rank,
                    "{\"world\": 2, \"config\": " + ProcessCluster.config(FROM, 2, 0) + "}");
            assertEquals(200, r.statusCode(), text(r));
        }
        String to = "{\"tp\": 1, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 1}";
        JsonNode status = cluster.await(cluster.reconfigure("j", ProcessCluster.config(FROM, 2, 0), to,
                Map.of(0, d.address()), 11));
        assertEquals("committed", status.path("state").asText(), status.toString());
    }

    /** A resource change onto one device that recovers the current generation, and one cancelled while it waits. */
    private void resourceChanges() throws Exception {
        HttpResponse<byte[]> put = send("PUT", "/api/v1/files/job/j/model.json?replace=true", ModelSpecJson.write(model));
        assertTrue(put.statusCode() / 100 == 2, text(put));
        HttpResponse<byte[]> started = send("POST", JobRoutes.PREFIX + "j/resources",
                "{\"devices\": [[0,0]], \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 1}, \"recover\": true}");
        assertEquals(202, started.statusCode(), text(started));
        JsonNode done = cluster.await(json.readTree(started.body()).get("status").asText());
        assertEquals("done", done.path("state").asText(), done.toString());
        HttpResponse<byte[]> waiting = send("POST", JobRoutes.PREFIX + "j/resources",
                "{\"devices\": [[0,0],[0,1]], \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 2}}");
        assertEquals(202, waiting.statusCode(), text(waiting));
        String status = json.readTree(waiting.body()).get("status").asText();
        assertEquals(200, send("DELETE", status, null).statusCode());
        JsonNode cancelled = cluster.await(status);
        assertEquals("cancelled", cancelled.path("state").asText(), cancelled.toString());
    }

    /** The first JSON log line whose message starts with {@code prefix}, waiting for it (the log is asynchronous). */
    private JsonNode line(String prefix) throws Exception {
        String l = d.awaitLine("\"msg\":\"" + prefix, 30);
        JsonNode n = json.readTree(l.substring(l.indexOf('{')));
        assertTrue(n.path("msg").asText().startsWith(prefix), l);
        return n;
    }

    @Test
    void lifecycle_jsonLogLines_andMetricsFamilies() throws Exception {
        d = cluster.start();
        saveAndReconfigure();
        resourceChanges();
        for (String l : d.log()) { // every line is one JSON object with the fixed fields
            JsonNode n = json.readTree(l);
            assertTrue(n.has("ts") && n.has("level") && n.has("logger") && n.has("msg"), l);
        }
        JsonNode save = line("save job=j step=10 rank=0");
        assertEquals(10, save.path("step").asLong());
        assertTrue(save.path("duration_ms").isNumber() && save.path("bytes").asLong() > 0, save.toString());
        line("generation sealed job=j step=10 rank=1");
        assertEquals("j", line("generation complete job=j step=10").path("job").asText());
        assertEquals("check", line("reconfiguration phase job=j").path("phase").asText());
        line("reconfiguration started job=j");
        line("part prepared job=j");
        line("part committed job=j");
        JsonNode committed = line("reconfiguration committed job=j");
        assertTrue(committed.path("duration_ms").isNumber() && committed.has("bytes_between_workers")
                && committed.has("lower_bound_bytes"), committed.toString());
        line("stop flag raised job=j");
        line("stop flag cleared job=j");
        assertEquals("stopping", line("resource change job=j").path("state").asText());
        assertTrue(line("resource change phase job=j").path("duration_ms").isNumber());
        d.awaitLine("cancelled before every rank had saved", 30);
        Map<String, PromText.Family> metrics = PromText.parse(text(send("GET", "/metrics", null)));
        assertMetrics(metrics);
        assertDashboardUses(metrics);
    }

    @Test
    void aFreshDaemon_servesEveryFamilyAtZero_beforeAnySaveMountOrChange() throws Exception {
        d = cluster.start();
        Map<String, PromText.Family> m = PromText.parse(text(send("GET", "/metrics", null)));
        Map<String, Map<String, String>> zero = new java.util.LinkedHashMap<>();
        zero.put("tenplex_saves_total", Map.of());
        zero.put("tenplex_save_bytes_total", Map.of());
        zero.put("tenplex_stop_flags_raised_total", Map.of());
        zero.put("tenplex_generations_total", Map.of("event", "completed"));
        zero.put("tenplex_reconfigurations_total", Map.of("outcome", "committed"));
        zero.put("tenplex_reconfiguration_bytes_total", Map.of("kind", "between_workers"));
        zero.put("tenplex_resource_changes_total", Map.of("state", "requested"));
        zero.put("tenplex_reconfiguration_downtime_seconds", Map.of());
        zero.put("tenplex_reconfiguration_downtime_phase_seconds", Map.of("phase", "relaunch"));
        zero.put("tenplex_dataset_mounts_total", Map.of("event", "mounted"));
        zero.put("tenplex_dataset_samples_loaded_total", Map.of("source", "peer"));
        zero.put("tenplex_dataset_reads_total", Map.of());
        zero.forEach((family, labels) -> {
            PromText.Family f = m.get(family);
            assertTrue(f != null, family + " is served from the start; families: " + m.keySet());
            assertTrue(f.samples().stream().anyMatch(s -> s.labels().entrySet().containsAll(labels.entrySet())),
                    family + labels + " has a series: " + f);
            assertEquals(0.0, f.sum(family, labels), family);
        });
        assertEquals(0.0, m.get("tenplex_reconfiguration_phase_seconds")
                .sum("tenplex_reconfiguration_phase_seconds_count", Map.of("phase", "check")));
        for (String family : List.of("tenplex_job_step", "tenplex_job_generation", "tenplex_job_world_size",
                "tenplex_job_parallelism", "tenplex_job_change_pending", "tenplex_job_state")) {
            assertTrue(m.containsKey(family) && m.get(family).samples().isEmpty(), family + " is declared, without jobs "
                    + "without series");
        }
        assertDashboardUses(m);
        d.awaitLine("ready on", 30);
        assertTrue(d.log().stream().noneMatch(l -> l.contains("FilterManager") || l.contains("HDF5 filter")),
                "the HDF5 library's filter lines stay below the daemon's level: " + d.log());
    }

    /**
     * Every series the Grafana dashboard asks for is one the daemon serves (FUSE families appear with the
     * mount, which these tests do not make; a fresh daemon has every other family, at zero).
     */
    private void assertDashboardUses(Map<String, PromText.Family> m) throws Exception {
        String dashboard = java.nio.file.Files.readString(java.nio.file.Path.of(System.getProperty("user.dir"))
                .getParent().resolve("deploy/grafana/tenplex-dashboard.json"));
        java.util.regex.Matcher used = java.util.regex.Pattern.compile("\\b((?:tenplex|jvm|process)_[a-z_]+)")
                .matcher(dashboard);
        int n = 0;
        while (used.find()) {
            String name = used.group(1);
            if (name.startsWith("tenplex_fuse_")) {
                continue;
            }
            String family = name.replaceAll("_(bucket|count|sum)$", "");
            assertTrue(m.containsKey(family) || m.containsKey(name), "the dashboard uses " + name);
            n++;
        }
        assertTrue(n > 10, "series found in the dashboard: " + n);
        for (String family : m.keySet()) { // the per-job gauges each have a panel
            if (family.startsWith("tenplex_job_")) {
                assertTrue(dashboard.contains(family), "the dashboard shows " + family);
            }
        }
    }

    private void assertMetrics(Map<String, PromText.Family> m) {
        assertTrue(m.get("tenplex_reconfigurations_total").sum("tenplex_reconfigurations_total",
                Map.of("outcome", "committed")) >= 2, m.get("tenplex_reconfigurations_total").toString());
        PromText.Family phases = m.get("tenplex_reconfiguration_phase_seconds");
        assertEquals("histogram", phases.type());
        for (String phase : List.of("check", "execute", "commit")) {
            assertTrue(phases.sum("tenplex_reconfiguration_phase_seconds_count", Map.of("phase", phase)) >= 2, phase);
        }
        PromText.Family bytes = m.get("tenplex_reconfiguration_bytes_total");
        for (String kind : List.of("on_device", "within_worker", "between_workers", "lower_bound")) {
            assertFalse(bytes.samples().stream().noneMatch(s -> kind.equals(s.labels().get("kind"))), kind);
        }
        assertEquals(2, m.get("tenplex_saves_total").sum("tenplex_saves_total", Map.of()));
        assertTrue(m.get("tenplex_save_bytes_total").sum("tenplex_save_bytes_total", Map.of()) > 0);
        assertEquals(2, m.get("tenplex_save_stall_seconds").sum("tenplex_save_stall_seconds_count", Map.of()));
        assertEquals(1, m.get("tenplex_generations_total").sum("tenplex_generations_total", Map.of("event", "completed")));
        assertEquals(2, m.get("tenplex_stop_flags_raised_total").sum("tenplex_stop_flags_raised_total", Map.of()));
        PromText.Family changes = m.get("tenplex_resource_changes_total");
        assertEquals(2, changes.sum("tenplex_resource_changes_total", Map.of("state", "requested")));
        assertEquals(1, changes.sum("tenplex_resource_changes_total", Map.of("state", "done")));
        assertEquals(1, changes.sum("tenplex_resource_changes_total", Map.of("state", "cancelled")));
        assertTrue(m.get("jvm_buffer_pool_used_bytes").sum("jvm_buffer_pool_used_bytes", Map.of("pool", "direct")) > 0);
        assertTrue(m.containsKey("jvm_memory_bytes_used") && m.containsKey("tenplex_store_used_bytes"), m.keySet()
                .toString());
        assertTrue(m.get("tenplex_job_generation").sum("tenplex_job_generation", Map.of("job", "j")) >= 10,
                m.get("tenplex_job_generation").toString());
        assertTrue(m.get("tenplex_job_world_size").sum("tenplex_job_world_size", Map.of("job", "j")) >= 1);
        assertEquals(1, m.get("tenplex_job_state").sum("tenplex_job_state", Map.of("job", "j")), "one state");
        for (PromText.Sample s : m.get("tenplex_http_requests_total").samples()) {
            assertFalse("unknown".equals(s.labels().get("route")), s.toString());
        }
    }
}
