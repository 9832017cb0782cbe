package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.tenplex.adapters.kubernetes.PodMembership.Membership;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.ParallelConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kubernetes scheduler adapter: watches the pods of one job (a label selector in a namespace)
 * with a fabric8 informer and turns changes of its ready pods and their GPUs into resource changes
 * on the coordinating daemon ({@code POST /api/v1/jobs/<job>/resources}, the lifecycle of
 * {@link io.tenplex.adapters.ResourceChange}).
 *
 * <p>Each node with member pods is a tenplex worker; its daemon (the DaemonSet's, on the host
 * network) is at {@code hostIP:daemonPort}. Nodes get worker numbers in the order they first appear
 * and keep them, so the daemons of workers that left stay reachable as sources of the saved state.
 * Changes are acted on once the pods have been still for the settle time (pods of a scale-up become
 * ready one by one). After the first observation and after every committed change the adapter
 * publishes the job's assignment (configuration, each pod's ranks, the master address) at
 * {@code /job/<job>/kubernetes/assignment.json} on the coordinating daemon, where relaunched ranks
 * read it; it also tells a restarted adapter what was applied.
 */
public final class KubernetesAdapter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KubernetesAdapter.class);
    private static final int KEPT_EVENTS = 200;

    /**
     * @param namespace    the job's namespace
     * @param selector     equality label selector of the job's pods
     * @param job          the tenplex job name
     * @param gpuResource  the extended resource counted as devices ({@code nvidia.com/gpu})
     * @param daemonPort   the port of every node's tenplexd
     * @param daemon       the coordinating daemon ({@code host:port})
     * @param token        its bearer token, or null
     * @param settle       how long pods must be still before a change is acted on
     * @param saveTimeout  how long a change waits for the ranks to save
     */
    public record Settings(String namespace, Map<String, String> selector, String job, String gpuResource,
            int daemonPort, String daemon, String token, Duration settle, Duration saveTimeout) {
        public Settings {
            selector = Map.copyOf(selector);
            if (selector.isEmpty()) {
                throw new IllegalArgumentException("the label selector must name at least one label (all pods of the "
                        + "namespace are not a job)");
            }
            if (daemonPort < 1 || daemonPort > 65535) {
                throw new IllegalArgumentException("daemon port " + daemonPort + " out of range 1..65535");
            }
            if (settle.isNegative() || saveTimeout.isNegative() || saveTimeout.isZero()) {
                throw new IllegalArgumentException("settle must be >= 0 and the save timeout > 0");
            }
        }

        /** Parses {@code k=v,k2=v2} (equality selectors only). */
        public static Map<String, String> parseSelector(String s) {
            return Selectors.parse(s);
        }
    }

    /**
     * A snapshot of what the adapter saw and did; {@code settled} when no evaluation runs or waits
     * (everything observed so far has been acted on).
     */
    public record Status(long evaluations, String observed, Map<String, Integer> applied, String running,
            List<Change> changes, List<String> events, JsonNode assignment, boolean settled) {
    }

    /**
     * A change the adapter asked for and how it ended: {@code id} is absent when the daemon refused
     * it, {@code error} and {@code config} when the daemon's status had none.
     *
     * @param devices devices per node
     * @param state the change's final state ({@code done}, {@code failed}) or {@code refused}
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Change(String id, Map<String, Integer> devices, String state, String error, JsonNode config) {
        /** Change {@code id} to {@code m} ended with the daemon's status {@code done}. */
        static Change of(String id, Membership m, JsonNode done) {
            return new Change(id, m.shape(), done.path("state").asText(),
                    done.has("error") ? done.path("error").asText() : null, done.has("config") ? done.get("config") : null);
        }
    }

    private final KubernetesClient client;
    private final Settings settings;
    private final DaemonApi daemon;
    private final ObjectMapper json = new ObjectMapper();
    private final ScheduledExecutorService loop = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "kubernetes-adapter");
        t.setDaemon(true);
        return t;
    });
    private final long started = System.nanoTime();
    private volatile SharedIndexInformer<Pod> informer;
    private ScheduledFuture<?> pending;

    // guarded by this
    private long evaluations;
    /** Evaluations scheduled or running. */
    private int queued;
    private Membership observed;
    private Map<String, Integer> applied;
    private Map<String, Integer> refused;
    private String running;
    private final List<Change> changes = new ArrayList<>();
    private final Deque<String> events = new ArrayDeque<>();
    private JsonNode assignment;
    private final Workers workers;

    /** @param daemons how the coordinating daemon is reached (its scheme, TLS trust and token) */
    public KubernetesAdapter(KubernetesClient client, Settings settings, io.tenplex.jobs.common.DaemonClient daemons) {
        this.client = client;
        this.settings = settings;
        this.daemon = new DaemonApi(settings.daemon(), settings.job(), daemons);
        this.workers = new Workers(settings.daemonPort());
    }

    private String assignmentPath() {
        return new io.tenplex.jobs.common.JobLayout(settings.job()).kubernetesAssignment().toString();
    }

    /**
     * Restores the last published assignment (a restarted adapter keeps worker numbers and what was
     * applied), then starts watching. Returns once the informer has listed the pods.
     */
    public KubernetesAdapter start() throws IOException, InterruptedException {
        java.util.Optional<byte[]> saved = daemon.readFile(assignmentPath());
        if (saved.isPresent()) {
            restore(json.readTree(saved.get()));
        }
        event("watching pods " + settings.selector() + " in namespace " + settings.namespace() + " for job "
                + settings.job() + "; daemon " + daemon.address());
        informer = client.pods().inNamespace(settings.namespace()).withLabels(settings.selector())
                .inform(new OnAnyChange(this::poke), 0);
        poke();
        return this;
    }

    private synchronized void restore(JsonNode a) {
        Map<String, Integer> shape = workers.restore(a);
        applied = shape;
        assignment = a;
        event("restored assignment " + shape + " (worker numbers " + workers.numbers() + ")");
    }

    /** Something changed: evaluate once the pods have been still for the settle time. */
    private synchronized void poke() {
        if (loop.isShutdown()) {
            return;
        }
        if (pending != null && pending.cancel(false)) {
            queued--; // not yet started: pushed back by this newer event
        }
        queued++;
        pending = loop.schedule(this::evaluate, settings.settle().toMillis(), TimeUnit.MILLISECONDS);
    }

    private void evaluate() {
        if (informer == null) { // an event before inform() returned: the poke after it evaluates
            synchronized (this) {
                queued--;
            }
            return;
        }
        Membership m = PodMembership.of(informer.getStore().list(), settings.gpuResource());
        Map<String, Integer> before;
        synchronized (this) {
            evaluations++;
            if (observed == null || !observed.equals(m)) {
                event("observed " + m + (m.skipped().isEmpty() ? "" : "; not counted: " + m.skipped()));
            }
            observed = m;
            before = applied;
            notifyAll();
        }
        try {
            if (m.nodes().isEmpty()) {
                return; // nothing to run on; the next ready pods are a change from what was applied
            }
            if (before == null) {
                workers.number(m);
                publish(m, configFor(m), null, null);
                synchronized (this) {
                    applied = m.shape();
                    event("initial devices " + m + "; assignment published");
                }
                return;
            }
            if (m.shape().equals(before) || m.shape().equals(refused)) {
                return;
            }
            change(m, before);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | RuntimeException e) {
            event("error: " + e.getMessage() + "; will try again in " + Math.max(1, settings.settle().toSeconds()) + " s");
            retryLater();
        } finally {
            synchronized (this) {
                queued--;
                notifyAll();
            }
        }
    }

    private void retryLater() {
        synchronized (this) {
            if (!loop.isShutdown()) {
                queued++;
                pending = loop.schedule(this::evaluate, Math.max(1000, settings.settle().toMillis()), TimeUnit.MILLISECONDS);
            }
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
                event("no configuration for " + m + ": " + e.getMessage());
                return null;
            }
            throw e;
        }
    }

    private void change(Membership m, Map<String, Integer> before) throws IOException, InterruptedException {
        JsonNode started = startChange(m);
        if (started == null) {
            return;
        }
        String id = started.path("id").asText();
        synchronized (this) {
            running = id;
        }
        event("resource change " + id + ": " + before + " -> " + m.shape() + " (stop flag raised; waiting for the save)");
        JsonNode done;
        do {
            done = daemon.awaitChange(id, settings.saveTimeout().plusMinutes(15));
        } while (done.path("state").asText().equals("stopping") || done.path("state").asText().equals("reconfiguring"));
        Change record = Change.of(id, m, done);
        if ("done".equals(done.path("state").asText())) {
            applied(m, id, done);
        } else {
            synchronized (this) {
                refused = m.shape();
            }
            event("change " + id + " " + done.path("state").asText() + ": " + done.path("error").asText()
                    + " (not retried until the pods change again)");
            continueAfter(id, done);
        }
        synchronized (this) {
            running = null;
            changes.add(record);
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
                event("another change of job " + settings.job() + " is running; trying again later");
                retryLater();
                return null;
            }
            if (e.status / 100 == 4) {
                synchronized (this) {
                    refused = m.shape();
                    changes.add(new Change(null, m.shape(), "refused", e.getMessage(), null));
                }
                event("the daemon refused the change to " + m + ": " + e.getMessage() + " (not retried until the pods "
                        + "change again)");
                return null;
            }
            throw e;
        }
    }

    /** Change {@code id} is done: publishes the new assignment and takes its devices as applied. */
    private void applied(Membership m, String id, JsonNode done) throws IOException, InterruptedException {
        publish(m, done.get("config"), id, done.path("generation"));
        synchronized (this) {
            applied = m.shape();
            refused = null;
        }
        ParallelConfig c = ParallelConfigJson.parse(done.path("config"), "config");
        event("change " + id + " done: " + c.tp() + "," + c.pp() + "," + c.dp() + " (T,P,D) from generation "
                + done.path("generation").asText()
                + "; assignment published");
    }

    /** Change {@code id} failed: when the ranks saved for it, they continue under the last assignment ({@link FailedChange}). */
    private void continueAfter(String id, JsonNode failed) throws IOException, InterruptedException {
        JsonNode last;
        synchronized (this) {
            last = assignment;
        }
        ObjectNode a = FailedChange.again(last, id, failed);
        if (a != null) {
            daemon.writeFile(assignmentPath(), json.writerWithDefaultPrettyPrinter().writeValueAsBytes(a));
            synchronized (this) {
                assignment = a;
            }
            event("the ranks saved generation " + a.path("generation").asText() + " for change " + id
                    + ": the last assignment published again for it; they continue under it");
        }
    }

    /** Writes the assignment: configuration, workers, and each pod's local devices and ranks. */
    private void publish(Membership m, JsonNode config, String change, JsonNode generation)
            throws IOException, InterruptedException {
        Assignment a = workers.assignment(settings.job(), m, config, change, generation);
        daemon.writeFile(assignmentPath(), json.writerWithDefaultPrettyPrinter().writeValueAsString(a)
                .getBytes(StandardCharsets.UTF_8));
        synchronized (this) {
            assignment = json.valueToTree(a);
        }
    }

    private synchronized void event(String what) {
        String line = String.format(java.util.Locale.ROOT, "%.3fs %s", (System.nanoTime() - started) / 1e9, what);
        events.addLast(line);
        while (events.size() > KEPT_EVENTS) {
            events.removeFirst();
        }
        LOG.info("{}", what);
        notifyAll();
    }

    /** True while the pod informer runs with its watch open (the adapter's readiness). */
    public boolean watching() {
        SharedIndexInformer<Pod> i = informer;
        return i != null && !loop.isShutdown() && i.isRunning() && i.isWatching();
    }

    public synchronized Status status() {
        return new Status(evaluations, observed == null ? null : observed.toString(),
                applied == null ? null : Map.copyOf(applied), running, List.copyOf(changes), List.copyOf(events),
                assignment == null ? null : assignment.deepCopy(), queued == 0);
    }

    /** Waits until the status satisfies {@code until}; returns it, or throws on timeout. */
    public Status await(Predicate<Status> until, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            while (true) {
                Status s = status();
                if (until.test(s)) {
                    return s;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("timed out after " + timeout + "; last status: " + s);
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            loop.shutdownNow();
        }
        if (informer != null) {
            informer.close();
        }
    }
}
