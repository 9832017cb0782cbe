package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.adapters.kubernetes.KubernetesAdapter.Change;
import io.tenplex.adapters.kubernetes.KubernetesAdapter.Settings;
import io.tenplex.adapters.kubernetes.PodMembership.Membership;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.ParallelConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * What the Kubernetes adapter asks of the coordinating daemon for a membership of the job's pods: at
 * the first observation, the daemon's parallelizer's configuration and the first assignment; after
 * that, a resource change followed to its end, the new assignment published when it is done and the
 * last one published again for ranks that saved for a failed one. A change the daemon refuses is not
 * asked for again until the pods change; one refused because another runs is retried later.
 */
final class ChangeRequests {
    private final Settings settings;
    private final DaemonApi daemon;
    private final ObjectMapper json;
    private final Workers workers;
    private final AdapterState state;
    private final Runnable retryLater;

    /** @param retryLater evaluates the pods again after a while */
    ChangeRequests(Settings settings, DaemonApi daemon, ObjectMapper json, Workers workers, AdapterState state,
            Runnable retryLater) {
        this.settings = settings;
        this.daemon = daemon;
        this.json = json;
        this.workers = workers;
        this.state = state;
        this.retryLater = retryLater;
    }

    /** Where the assignment is published on the coordinating daemon. */
    String assignmentPath() {
        return new io.tenplex.jobs.common.JobLayout(settings.job()).kubernetesAssignment().toString();
    }

    /** The first observation of pods: numbers their workers and publishes the assignment. */
    void first(Membership m) throws IOException, InterruptedException {
        workers.number(m);
        JsonNode a = publish(m, configFor(m), null, null);
        synchronized (state) { // one step: a reader that sees the assignment sees what it applied
            state.assignment = a;
            state.applied = m.shape();
            state.event("initial devices " + m + "; assignment published");
        }
    }

    /** The configuration a first launch uses: the daemon's parallelizer for these devices. */
    private JsonNode configFor(Membership m) throws IOException, InterruptedException {
        ObjectNode b = json.createObjectNode();
        workers.devices(m, b);
        try {
            return daemon.parallelize(b);
        } catch (DaemonApi.Refused e) {
            if (e.status / 100 == 4) {
                state.event("no configuration for " + m + ": " + e.getMessage());
                return null;
            }
            throw e;
        }
    }

    /** Changes the job's devices from {@code before} to {@code m}, following the change to its end. */
    void change(Membership m, Map<String, Integer> before) throws IOException, InterruptedException {
        JsonNode started = startChange(m);
        if (started == null) {
            return;
        }
        String id = started.path("id").asText();
        synchronized (state) {
            state.running = id;
        }
        state.event("resource change " + id + ": " + before + " -> " + m.shape() + " (stop flag raised; waiting for the save)");
        JsonNode done;
        do {
            done = daemon.awaitChange(id, settings.saveTimeout().plusMinutes(15));
        } while (done.path("state").asText().equals("stopping") || done.path("state").asText().equals("reconfiguring"));
        Change record = Change.of(id, m, done);
        if ("done".equals(done.path("state").asText())) {
            applied(m, id, done);
        } else {
            synchronized (state) {
                state.refused = m.shape();
            }
            state.event("change " + id + " " + done.path("state").asText() + ": " + done.path("error").asText()
                    + " (not retried until the pods change again)");
            continueAfter(id, done);
        }
        synchronized (state) {
            state.running = null;
            state.changes.add(record);
        }
    }

    /** Asks the daemon for the change to {@code m}; its answer, or null when refused (or to be retried). */
    private JsonNode startChange(Membership m) throws IOException, InterruptedException {
        workers.number(m);
        ObjectNode body = json.createObjectNode();
        workers.devices(m, body);
        workers.daemons(body.putObject("daemons"));
        body.put("saveTimeoutSeconds", Math.max(1, settings.saveTimeout().toSeconds()));
        try {
            return daemon.startChange(body);
        } catch (DaemonApi.Refused e) {
            if (e.status == 409) {
                state.event("another change of job " + settings.job() + " is running; trying again later");
                retryLater.run();
                return null;
            }
            if (e.status / 100 == 4) {
                synchronized (state) {
                    state.refused = m.shape();
                    state.changes.add(new Change(null, m.shape(), "refused", e.getMessage(), null));
                }
                state.event("the daemon refused the change to " + m + ": " + e.getMessage() + " (not retried until the pods "
                        + "change again)");
                return null;
            }
            throw e;
        }
    }

    /** Change {@code id} is done: publishes the new assignment and takes its devices as applied. */
    private void applied(Membership m, String id, JsonNode done) throws IOException, InterruptedException {
        JsonNode a = publish(m, done.get("config"), id, done.path("generation"));
        synchronized (state) {
            state.assignment = a;
            state.applied = m.shape();
            state.refused = null;
        }
        ParallelConfig c = ParallelConfigJson.parse(done.path("config"), "config");
        state.event("change " + id + " done: " + c.tp() + "," + c.pp() + "," + c.dp() + " (T,P,D) from generation "
                + done.path("generation").asText()
                + "; assignment published");
    }

    /** Change {@code id} failed: when the ranks saved for it, they continue under the last assignment ({@link FailedChange}). */
    private void continueAfter(String id, JsonNode failed) throws IOException, InterruptedException {
        JsonNode last;
        synchronized (state) {
            last = state.assignment;
        }
        ObjectNode a = FailedChange.again(last, id, failed);
        if (a != null) {
            daemon.writeFile(assignmentPath(), json.writerWithDefaultPrettyPrinter().writeValueAsBytes(a));
            synchronized (state) {
                state.assignment = a;
            }
            state.event("the ranks saved generation " + a.path("generation").asText() + " for change " + id
                    + ": the last assignment published again for it; they continue under it");
        }
    }

    /**
     * Writes the assignment (configuration, workers, and each pod's local devices and ranks) and returns
     * it; the caller sets it in the state together with what it applied.
     */
    private JsonNode publish(Membership m, JsonNode config, String change, JsonNode generation)
            throws IOException, InterruptedException {
        Assignment a = workers.assignment(settings.job(), m, config, change, generation);
        daemon.writeFile(assignmentPath(), json.writerWithDefaultPrettyPrinter().writeValueAsString(a)
                .getBytes(StandardCharsets.UTF_8));
        return json.valueToTree(a);
    }
}
