package io.tenplex.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.Broadcast;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.durable.DurableCopies;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.JobMetrics;
import io.tenplex.jobs.generations.LoadChoice;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.jobs.generations.Sealed;
import io.tenplex.jobs.reconfigure.FlowRates;
import io.tenplex.jobs.reconfigure.InferredModels;
import io.tenplex.jobs.reconfigure.JobModels;
import io.tenplex.jobs.reconfigure.PartRunner;
import io.tenplex.jobs.reconfigure.PlanAhead;
import io.tenplex.jobs.reconfigure.Rebuilding;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigurationEvents;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.jobs.reconfigure.Registry;
import io.tenplex.jobs.recovery.Recovery;
import io.tenplex.jobs.shared.Sealer;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.Ptc;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.transform.Plan;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * The job lifecycle of one daemon as a typed facade: seals and generations, the parts of plans it
 * executes, the reconfigurations it coordinates, stop flags here and on the other daemons. Callers
 * (the HTTP routes, the scheduler adapters) hand it parsed, typed requests; it talks to the other
 * daemons through a {@link DaemonClient}. Its registries forget finished entries ({@link Registry}).
 * Planning and sealing run on the caller's thread: callers keep them off event loops.
 */
public final class Jobs implements Sealer {
    /** How long a prepared part waits for commit or abort before it resolves itself, unless a request says. */
    public static final Duration DEFAULT_PREPARED_TIMEOUT = Duration.ofSeconds(60);
    /** Finished parts and reconfigurations are forgotten after this long, and beyond {@link #MAX_FINISHED}. */
    public static final Duration RETENTION = Duration.ofMinutes(30);
    public static final int MAX_FINISHED = 1024;

    /** A dry run's answer: the plan's summary. */
    public record DryRun(String from, String to, String source, int shards, String report, List<String> plan,
            Map<Integer, String> sources) {
    }

    private final TensorStore store;
    private final DaemonClient client;
    private final PartRunner.Context partContext;
    private final JobExecutors exec;
    private final StopFlags flags;
    private final Generations generations;
    private final io.tenplex.jobs.tiers.PartnerCopies partnerCopies;
    private final io.tenplex.jobs.tiers.ErasureParity erasureParity;
    private final Recovery recovery;
    private final JobModels models;
    private final Registry<PartRunner> parts;
    private final Registry<Reconfiguration> reconfigurations;
    private final AtomicInteger ids = new AtomicInteger();
    private volatile Duration preparedTimeout = DEFAULT_PREPARED_TIMEOUT;
    private volatile long linkRate;
    private volatile String selfAddress = "";
    private volatile Map<Integer, InetSocketAddress> defaultDaemons = Map.of();

    public Jobs(TensorStore store, DaemonClient client, RangeReads reads, JobExecutors exec, StopFlags flags) {
        this(store, client, reads, exec, flags, RETENTION, System::nanoTime);
    }

    /** @param clock nanoseconds, for the registries' retention (tests advance it) */
    public Jobs(TensorStore store, DaemonClient client, RangeReads reads, JobExecutors exec, StopFlags flags,
            Duration retention, LongSupplier clock) {
        JobMetrics.atStart();
        this.store = store;
        this.client = client;
        this.exec = exec;
        this.flags = flags;
        this.generations = new Generations(store);
        this.models = new JobModels(store, new InferredModels(store, generations, client));
        this.partContext = new PartRunner.Context(store, client, reads, exec.readers(), exec.background(), exec.timer(),
                DEFAULT_PREPARED_TIMEOUT, generations);
        java.util.function.LongSupplier tierPace = () -> (long) (linkRate * FlowRates.USABLE / 8
                * io.tenplex.jobs.tiers.PartnerCopies.LINK_SHARE);
        this.partnerCopies = new io.tenplex.jobs.tiers.PartnerCopies(store, generations, client, reads, exec.background(),
                () -> defaultDaemons, this::selfWorker, tierPace);
        generations.addListener(partnerCopies);
        this.erasureParity = new io.tenplex.jobs.tiers.ErasureParity(store, generations, client, reads, exec.background(),
                () -> defaultDaemons, this::selfWorker, tierPace);
        generations.addListener(erasureParity);
        this.recovery = new Recovery(generations, client, new io.tenplex.jobs.tiers.ErasureRebuild(store, generations,
                client, reads), exec.background());
        this.parts = new Registry<>(retention, MAX_FINISHED, clock);
        this.reconfigurations = new Registry<>(retention, MAX_FINISHED, clock);
    }

    public StopFlags stopFlags() {
        return flags;
    }

    /**
     * @throws io.tenplex.store.StoreException not found, naming the jobs this daemon knows, when it does
     *     not know {@code job} (no tree under {@code /job}, no stop flag raised here)
     */
    public void requireKnown(String job) {
        KnownJobs.require(store, generations, flags, job);
    }

    public Generations generations() {
        return generations;
    }

    /** L2: the partner copies this daemon keeps of the generations of its jobs. */
    public io.tenplex.jobs.tiers.PartnerCopies partnerCopies() {
        return partnerCopies;
    }

    /** L3: the parity blocks this daemon keeps of the generations of its jobs. */
    public io.tenplex.jobs.tiers.ErasureParity erasureParity() {
        return erasureParity;
    }

    /** The other workers' durable directories this daemon reads when recovering around a lost one (L4). */
    public void setDurableCopies(DurableCopies copies) {
        recovery.setDurableCopies(copies);
    }

    /** This daemon's worker number: the daemon of the cluster ({@code --peers}) at its own address, if any. */
    public java.util.OptionalInt selfWorker() {
        return SelfWorker.find(selfAddress, defaultDaemons);
    }

    public JobExecutors executors() {
        return exec;
    }

    /** How long finished parts and reconfigurations are kept (tests shorten it; default {@link #RETENTION}). */
    public void setRetention(Duration retention) {
        parts.setRetention(retention);
        reconfigurations.setRetention(retention);
    }

    /** Every worker's link rate in bits/s used when a reconfiguration names none (0: flows left to TCP). */
    public void setLinkRate(long bitsPerSecond) {
        this.linkRate = bitsPerSecond;
    }

    /** How long a prepared part waits for the coordinator's commit or abort before it asks the others. */
    public void setPreparedTimeout(Duration timeout) {
        this.preparedTimeout = timeout;
    }

    /** The daemons of the cluster (worker to address) used when a request names none. */
    public void setDefaultDaemons(Map<Integer, InetSocketAddress> daemons) {
        this.defaultDaemons = Map.copyOf(daemons);
    }

    /** The address other daemons reach this one at: parts in doubt ask it for the outcome. */
    public void setSelfAddress(InetSocketAddress address) {
        this.selfAddress = SelfWorker.address(address);
    }

    /** {@code given}, or the daemon's defaults when it names none. */
    public Map<Integer, InetSocketAddress> daemons(Map<Integer, InetSocketAddress> given) {
        return given.isEmpty() ? defaultDaemons : given;
    }

    /** A new id for something this daemon starts ({@code prefix} then a counter and a random-ish suffix). */
    public String newId(String prefix) {
        return prefix + ids.incrementAndGet() + "-" + Long.toHexString(System.nanoTime() & 0xffffff);
    }

    /**
     * Seals a rank of a save step here, then tells every daemon of the cluster.
     *
     * @return completes when every daemon answered (those of the save's workers that failed are listed;
     *     a daemon of another worker, e.g. a lost one, that does not answer is only logged)
     */
    public CompletableFuture<Sealed> seal(String job, long step, int rank, int world, JsonNode config,
            Map<Integer, InetSocketAddress> daemons) throws IOException {
        return seal(job, step, rank, world, config, daemons, new JobLayout(job).savedRank(rank));
    }

    /** As {@link #seal(String, long, int, int, JsonNode, Map)}, sealing the tree at {@code saved}. */
    @Override
    public CompletableFuture<Sealed> seal(String job, long step, int rank, int world, JsonNode config,
            Map<Integer, InetSocketAddress> daemons, StorePath saved) throws IOException {
        long t = System.nanoTime();
        SealManifest manifest = generations.seal(job, step, rank, world, config, saved);
        boolean complete = generations.sealed(job, step, List.of(rank), world, config);
        SaveEvents.sealed(job, step, rank, manifest.bytes(), System.nanoTime() - t);
        int tensors = manifest.tensors().size();
        long bytes = manifest.bytes();
        Map<Integer, InetSocketAddress> told = daemons(daemons);
        List<Integer> holders = io.tenplex.jobs.tiers.Ring.of(config, world, told.keySet()).workers();
        return Broadcast.toAll(told, a -> client.sealed(a, job, step, List.of(rank), world, config))
                .thenApply(failed -> new Sealed(step, rank, world, tensors, bytes,
                        complete || generations.current(job).orElse(-1) == step, Broadcast.ofWorkers(failed, holders)));
    }

    /** What {@code rank} of {@code job} loads here: the newer of the latest generation and a reconfiguration's output. */
    @Override
    public LoadChoice loadChoice(String job, int rank) {
        return LoadChoice.choose(store, generations, job, rank);
    }

    /** Ranks of a step were sealed on another daemon; whether the generation is complete. */
    public boolean sealed(String job, long step, List<Integer> ranks, int world, JsonNode config) throws IOException {
        return generations.sealed(job, step, ranks, world, config);
    }

    /** Starts this daemon's part of a plan (idempotent per plan: a known part is answered as it is). */
    public PartRunner startPart(PlanPart part) {
        PartRunner.Context ctx = new PartRunner.Context(store, client, partContext.reads(), exec.readers(),
                exec.background(), exec.timer(), preparedTimeout, generations);
        return parts.computeIfAbsent(part.job(), part.planId(), () -> new PartRunner(part, ctx));
    }

    /** @throws StoreException not found when this daemon has no such part */
    public PartRunner part(String job, String planId) {
        parts.prune();
        return parts.get(job, planId).orElseThrow(() -> StoreException.notFound("no part of plan " + planId + " of job "
                + job + " on this daemon"));
    }

    /** @throws StoreException not found when this daemon coordinates no such reconfiguration (any more) */
    public Reconfiguration reconfiguration(String job, String id) {
        reconfigurations.prune();
        return reconfigurations.get(job, id).orElseThrow(() -> StoreException.notFound("no reconfiguration " + id
                + " of job " + job));
    }

    /** Forgets the finished parts and reconfigurations of a job, and its generations' record. */
    public void forget(String job) {
        parts.forget(job);
        reconfigurations.forget(job);
        generations.forget(job);
        generations.tiers().forget(job);
        generations.lost().forget(job);
    }

    /** Whether a part or reconfiguration of {@code job} still runs here. */
    public boolean running(String job) {
        return parts.of(job).stream().anyMatch(p -> p.finishedAt() == 0)
                || reconfigurations.of(job).stream().anyMatch(r -> r.finishedAt() == 0);
    }

    /** How many parts and reconfigurations of {@code job} this daemon keeps. */
    public int kept(String job) {
        return parts.of(job).size() + reconfigurations.of(job).size();
    }

    /** A plan with its source; {@code origins}: where each old rank is read when recovering (else empty). */
    private record Planned(Plan plan, Ptc from, String sourceDir, long step, Map<Integer, String> origins,
            Rebuilding rebuilding) {
        Planned(Plan plan, Ptc from, String sourceDir, long step, Map<Integer, String> origins) {
            this(plan, from, sourceDir, step, origins, Rebuilding.NONE);
        }
    }

    /** Plans a reconfiguration without starting it. */
    public DryRun dryRun(ReconfigureRequest r) throws IOException {
        Planned p = plan(r, true, null);
        Plan plan = p.plan();
        return new DryRun(plan.from().toString(), plan.to().toString(), new JobLayout(r.job(), p.sourceDir(), "load").source().toString(),
                plan.shards().size(), plan.report().toString(), plan.toString().lines().limit(40).toList(),
                p.origins().isEmpty() ? null : p.origins());
    }

    /** Plans before the state is saved (nothing stored or started): for {@link #reconfigure(ReconfigureRequest, PlanAhead)}. */
    public PlanAhead planAhead(ReconfigureRequest r) throws IOException {
        PlanAhead ahead = new PlanAhead();
        plan(r, true, ahead);
        return ahead;
    }

    /** Plans a reconfiguration and starts coordinating it in the background. */
    public Reconfiguration reconfigure(ReconfigureRequest r) throws IOException {
        return reconfigure(r, null);
    }

    /** As {@link #reconfigure(ReconfigureRequest)}, with the plan made ahead when its inputs are still those found. */
    public Reconfiguration reconfigure(ReconfigureRequest r, PlanAhead ahead) throws IOException {
        Planned p = plan(r, false, ahead);
        io.tenplex.jobs.reconfigure.PlanHeap.check(p.plan(), r.central(), Runtime.getRuntime().maxMemory());
        Map<Integer, InetSocketAddress> daemons = daemons(r.daemons());
        if (daemons.isEmpty()) {
            throw new IllegalArgumentException("no daemon addresses: give \"daemons\" in the request or start tenplexd "
                    + "with --peers");
        }
        if (r.central() >= 0 && !daemons.containsKey(r.central())) {
            throw new IllegalArgumentException("central worker " + r.central() + " has no daemon address");
        }
        long prepared = r.preparedTimeoutMillis().orElse(Math.min(Integer.MAX_VALUE, preparedTimeout.toMillis()));
        String coordinator = r.coordinator() != null ? r.coordinator() : selfAddress;
        String id = newId("p");
        Reconfiguration c = new Reconfiguration(r.job(), id, p.plan(), p.from(), daemons, p.step(), client,
                new Reconfiguration.Source(p.sourceDir(), r.central(), r.linkRate().orElse(linkRate), p.origins(),
                        p.rebuilding()),
                new Reconfiguration.InDoubtInfo(coordinator, prepared));
        reconfigurations.put(r.job(), id, c);
        c.start(exec.background());
        return c;
    }

    /** As {@link #planInHeap}; planning that runs out of heap is {@code TOO_LARGE} (its tables are dropped by then). */
    private Planned plan(ReconfigureRequest r, boolean dry, PlanAhead ahead) throws IOException {
        try {
            return planInHeap(r, dry, ahead);
        } catch (OutOfMemoryError e) {
            throw io.tenplex.jobs.reconfigure.PlanHeap.planning(r.job(), r.to(), e);
        }
    }

    /** @param dry only to plan: a lost worker's durable copy is looked at, not read; @param ahead to reuse or fill, or null */
    private Planned planInHeap(ReconfigureRequest r, boolean dry, PlanAhead ahead) throws IOException {
        Model model = r.modelSpec() != null ? models.store(r.job(), r.modelSpec())
                : models.stored(r.job(), daemons(r.daemons()), !dry, r.to());
        String sourceDir = "save";
        long step = r.step().orElse(0);
        JsonNode fromConfig = r.from();
        OptionalLong generation = r.generation().isPresent() ? r.generation() : r.fromSave() ? OptionalLong.empty()
                : generations.current(r.job());
        if (generation.isPresent()) {
            long g = generation.getAsLong();
            sourceDir = Generations.sourceDir(g);
            step = r.step().orElse(g);
            if (fromConfig == null) {
                fromConfig = generations.config(r.job(), g);
                if (fromConfig == null) {
                    throw new IllegalArgumentException("generation " + g + " of job " + r.job()
                            + " was saved without a configuration; give \"from\"");
                }
            }
        }
        Ptc from = ConfigJson.source(model, fromConfig == null ? com.fasterxml.jackson.databind.node.MissingNode
                .getInstance() : fromConfig);
        Ptc to = ConfigJson.target(model, r.to());
        if (generation.isPresent() && recovery.recoverable(r.job())) {
            Recovery.Sources around = recovery.aroundLost(r, model, generation.getAsLong(), from, to, dry,
                    daemons(r.daemons()), selfWorker());
            if (around != null) {
                Map<Integer, String> origins = new java.util.TreeMap<>();
                around.sources().origins().forEach((rank, o) -> origins.put(rank, o.toString()));
                Ptc placed = around.sources().from();
                return new Planned(PlanAhead.around(ahead, placed, to, around.sources().copies()), placed,
                        around.sources().sourceDir(), around.step(), origins,
                        new Rebuilding(around.sources().rebuilt(), around.sources().rebuilding(),
                                (rank, level) -> around.sources().origins().get(rank).from(level).toString(),
                                around.sources().release()));
            }
        }
        return new Planned(PlanAhead.plan(ahead, from, to), from, sourceDir, step, Map.of());
    }

    /**
     * The model spec stored with the job; with partition rules stored instead, the model inferred from
     * its newest complete generation's shards (listed on the daemons of {@code --peers}), then stored.
     */
    public Model storedModel(String job) {
        try {
            return models.stored(job, defaultDaemons, true, null);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The para-config table stored with the job (JSON text), if any. */
    public Optional<String> paraConfig(String job) {
        return SmallFiles.read(store, new JobLayout(job).paraConfig());
    }

    /**
     * Raises ({@code reason} given) or clears ({@code reason} null) the job's stop flag on these
     * daemons (the defaults when empty); answers the failures.
     */
    public CompletableFuture<List<String>> setRemoteFlags(String job, Map<Integer, InetSocketAddress> daemons,
            OptionalLong atStep, String reason) {
        return Broadcast.toAll(new java.util.TreeMap<>(daemons(daemons)), a -> reason != null
                ? client.raiseStop(a, job, atStep, reason) : client.clearStop(a, job));
    }
}
