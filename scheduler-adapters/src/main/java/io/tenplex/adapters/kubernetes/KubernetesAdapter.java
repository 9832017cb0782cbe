package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.tenplex.adapters.kubernetes.PodMembership.Membership;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

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
 * read it; it also tells a restarted adapter what was applied. What it asks of the daemon is in
 * {@link ChangeRequests}, what it saw and did in {@link AdapterState}. Following the JobSet or Job that
 * runs the pods ({@link #followJobSet}, {@link #followJob}), it also reports the size it asks for and ends with it.
 */
public final class KubernetesAdapter implements AutoCloseable {
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

        /** The pods of replicated job {@code replicatedJob} of JobSet {@code jobSet}, by the labels its controller sets. */
        public static Map<String, String> jobSetPods(String jobSet, String replicatedJob) {
            return OwnerWatch.Owner.jobSet(jobSet, replicatedJob).pods();
        }

        /** The pods of {@code batch/v1} Job {@code job}, by the label its controller sets. */
        public static Map<String, String> jobPods(String job) {
            return OwnerWatch.Owner.job(job).pods();
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
            List<Change> changes, List<String> events, JsonNode assignment, boolean settled, String ended) {
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
    private final AdapterState state = new AdapterState();
    private volatile SharedIndexInformer<Pod> informer;
    /** Guarded by {@link #state}. */
    private Evaluation pending;
    private final Workers workers;
    private final ChangeRequests requests;
    private OwnerWatch.Owner owner;
    private volatile OwnerWatch ownerWatch;
    /** Guarded by {@link #state}. */
    private OwnerWatch.Seen ownerSeen;
    private final List<Runnable> onEnd = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** @param daemons how the coordinating daemon is reached (its scheme, TLS trust and token) */
    public KubernetesAdapter(KubernetesClient client, Settings settings, io.tenplex.jobs.common.DaemonClient daemons) {
        this.client = client;
        this.settings = settings;
        this.daemon = new DaemonApi(settings.daemon(), settings.job(), daemons);
        this.workers = new Workers(settings.daemonPort());
        this.requests = new ChangeRequests(settings, daemon, json, workers, state, this::retryLater);
    }

    /**
     * Also follows JobSet {@code name} (before {@link #start}): the worker pods its replicated job
     * {@code replicatedJob} asks for are reported as events, and once it has ended (completed, failed
     * or deleted) the adapter acts on no more changes (its pods exiting at the end are not a resize) and
     * runs what {@link #onEnd} was given.
     */
    public KubernetesAdapter followJobSet(String name, String replicatedJob) {
        this.owner = OwnerWatch.Owner.jobSet(java.util.Objects.requireNonNull(name),
                java.util.Objects.requireNonNull(replicatedJob));
        return this;
    }

    /**
     * Also follows {@code batch/v1} Job {@code name} (before {@link #start}), as {@link #followJobSet}
     * does a JobSet: the pods it runs at once are reported, and its end ({@code Complete}, {@code Failed},
     * deleted) ends the changes.
     */
    public KubernetesAdapter followJob(String name) {
        this.owner = OwnerWatch.Owner.job(java.util.Objects.requireNonNull(name));
        return this;
    }

    /** Runs {@code action} once the followed JobSet or Job has ended. */
    public void onEnd(Runnable action) {
        onEnd.add(action);
    }

    /**
     * Restores the last published assignment (a restarted adapter keeps worker numbers and what was
     * applied), then starts watching. Returns once the informer has listed the pods.
     */
    public KubernetesAdapter start() throws IOException, InterruptedException {
        java.util.Optional<byte[]> saved = daemon.readFile(requests.assignmentPath());
        if (saved.isPresent()) {
            restore(json.readTree(saved.get()));
        }
        state.event("watching pods " + settings.selector() + " in namespace " + settings.namespace() + " for job "
                + settings.job() + "; daemon " + daemon.address());
        informer = client.pods().inNamespace(settings.namespace()).withLabels(settings.selector())
                .inform(new OnAnyChange(this::poke), 0);
        if (owner != null) {
            ownerWatch = OwnerWatch.start(client, settings.namespace(), owner, this::ownerSeen);
        }
        poke();
        return this;
    }

    private void ownerSeen(OwnerWatch.Seen seen) {
        boolean ended;
        synchronized (state) {
            if (seen.equals(ownerSeen) || seen.equals(OwnerWatch.Seen.ABSENT) && ownerSeen != null) {
                return; // unchanged, or absent at the start but seen since
            }
            boolean deleted = seen.gone() && ownerSeen != null && !ownerSeen.gone();
            ownerSeen = seen;
            ended = (seen.ended() != null || deleted) && state.ended == null;
            if (ended) {
                state.ended = deleted ? "Deleted" : seen.ended();
                state.event(owner + " " + state.ended + ": the job has ended; no more changes");
            } else if (seen.gone()) {
                state.event(owner + " not found" + (seen.equals(OwnerWatch.Seen.ABSENT)
                        ? " (not made yet, or deleted before this adapter started: then delete this adapter too)" : ""));
            } else if (state.ended == null) {
                state.event(owner + " asks for " + owner.asksFor(seen));
            }
        }
        if (ended) {
            onEnd.forEach(Runnable::run);
        }
    }

    private void restore(JsonNode a) {
        synchronized (state) {
            Map<String, Integer> shape = workers.restore(a);
            state.applied = shape;
            state.assignment = a;
            state.event("restored assignment " + shape + " (worker numbers " + workers.numbers() + ")");
        }
    }

    /** Something changed: evaluate once the pods have been still for the settle time. */
    private void poke() {
        synchronized (state) {
            if (loop.isShutdown()) {
                return;
            }
            if (pending != null && pending.withdraw()) {
                state.queued--; // not yet started: pushed back by this newer event
            }
            pending = schedule(settings.settle().toMillis());
        }
    }

    private void evaluate() {
        if (informer == null) { // an event before inform() returned: the poke after it evaluates
            synchronized (state) {
                state.queued--;
            }
            return;
        }
        Membership m = PodMembership.of(informer.getStore().list(), settings.gpuResource());
        Map<String, Integer> before;
        synchronized (state) {
            state.evaluations++;
            if (state.observed == null || !state.observed.equals(m)) {
                state.event("observed " + m + (m.skipped().isEmpty() ? "" : "; not counted: " + m.skipped()));
            }
            state.observed = m;
            noteFinished(m);
            if (state.ended != null || state.finished != null) { // the pods exit because the job is over
                state.queued--;
                state.notifyAll();
                return;
            }
            before = state.applied;
            state.notifyAll();
        }
        try {
            if (m.nodes().isEmpty()) {
                return; // nothing to run on; the next ready pods are a change from what was applied
            }
            if (before == null) {
                requests.first(m);
                return;
            }
            if (m.shape().equals(before) || m.shape().equals(state.refused)) {
                return;
            }
            requests.change(m, before);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | RuntimeException e) {
            state.event("error: " + e.getMessage() + "; will try again in " + Math.max(1, settings.settle().toSeconds()) + " s");
            retryLater();
        } finally {
            synchronized (state) {
                state.queued--;
                state.notifyAll();
            }
        }
    }

    /**
     * A pod that succeeded is a launcher that saw the job end (a pod being deleted exits 143, and a
     * StatefulSet's pods never succeed): the others are ending too, so their going is no resize. Under
     * the state's lock.
     */
    private void noteFinished(Membership m) {
        if (state.finished != null || state.ended != null) {
            return;
        }
        m.skipped().forEach((pod, why) -> {
            if (state.finished == null && PodMembership.SUCCEEDED.equals(why)) {
                state.finished = pod;
                state.event("pod " + pod + " succeeded: the job is ending; no more changes");
            }
        });
    }

    private void retryLater() {
        synchronized (state) {
            if (!loop.isShutdown() && !(pending != null && pending.waiting())) { // one waiting evaluation is enough
                pending = schedule(Math.max(1000, settings.settle().toMillis()));
            }
        }
    }

    /**
     * One scheduled evaluation. A newer event withdraws it while it has not started (a future's own
     * {@code cancel} cannot tell: it succeeds while the task runs, which would count it twice); whether
     * it started is decided under the state's lock. Guarded by {@link #state}.
     */
    private final class Evaluation implements Runnable {
        private boolean started;
        private boolean withdrawn;
        private ScheduledFuture<?> future;

        @Override
        public void run() {
            synchronized (state) {
                if (withdrawn) {
                    return;
                }
                started = true;
            }
            evaluate();
        }

        /** True while it waits to start. */
        boolean waiting() {
            return !started && !withdrawn;
        }

        /** Withdraws it if it has not started; true if it was. */
        boolean withdraw() {
            if (started || withdrawn) {
                return false;
            }
            withdrawn = true;
            future.cancel(false);
            return true;
        }
    }

    /** Schedules an evaluation in {@code millis}, counted in {@code queued}. Under the state's lock. */
    private Evaluation schedule(long millis) {
        Evaluation e = new Evaluation();
        state.queued++;
        e.future = loop.schedule(e, millis, TimeUnit.MILLISECONDS);
        return e;
    }

    /** True while the pod informer runs with its watch open (the adapter's readiness). */
    public boolean watching() {
        SharedIndexInformer<Pod> i = informer;
        OwnerWatch o = ownerWatch;
        return i != null && !loop.isShutdown() && i.isRunning() && i.isWatching() && (owner == null
                || o != null && o.watching());
    }

    public Status status() {
        return state.status();
    }

    /** Waits until the status satisfies {@code until}; returns it, or throws on timeout. */
    public Status await(Predicate<Status> until, Duration timeout) throws InterruptedException {
        return state.await(until, timeout);
    }

    @Override
    public void close() {
        synchronized (state) {
            loop.shutdownNow();
        }
        if (informer != null) {
            informer.close();
        }
        if (ownerWatch != null) {
            ownerWatch.close();
        }
    }
}
