package io.tenplex.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.Broadcast;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.durable.DurableCopies;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.JobMetrics;
import io.tenplex.jobs.generations.LoadChoice;
import io.tenplex.jobs.generations.SavesInFlight;
import io.tenplex.jobs.generations.Sealed;
import io.tenplex.jobs.reconfigure.InferredModels;
import io.tenplex.jobs.reconfigure.JobModels;
import io.tenplex.jobs.reconfigure.PartRunner;
import io.tenplex.jobs.reconfigure.PlanAhead;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.jobs.reconfigure.Registry;
import io.tenplex.jobs.shared.Sealer;
import io.tenplex.ptc.Model;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
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
    private final JobExecutors exec;
    private final StopFlags flags;
    private final Generations generations;
    private final ClusterDefaults cluster = new ClusterDefaults();
    private final CheckpointLevels levels;
    private final JobModels models;
    private final ReconfigurationPlanner planner;
    private final ChangeRegistry changes;
    private final SaveSealing sealing;
    private final SavesInFlight inFlight = new SavesInFlight();
    private final AtomicInteger ids = new AtomicInteger();

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
        this.levels = new CheckpointLevels(store, generations, client, reads, exec, cluster);
        this.planner = new ReconfigurationPlanner(generations, models, levels.recovery(), cluster);
        this.changes = new ChangeRegistry(store, client, reads, exec, generations, cluster, retention, clock);
        this.own = new OwnChanges(store, this::startPart, changes::knownPart);
        this.sealing = new SaveSealing(store, generations, client, cluster, flags.activity());
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

    /**
     * The jobs this daemon knows now (a tree under {@code /job}, saves on record, a stop flag raised here),
     * sorted; read from memory only.
     */
    public java.util.SortedSet<String> knownJobs() {
        return KnownJobs.names(store, generations, flags);
    }

    public Generations generations() {
        return generations;
    }

    /**
     * The daemon's shared memory, where moves place new shards so that a load on this host maps them
     * without a copy (null: private memory).
     */
    public void setMoveSegments(io.tenplex.store.memory.SharedSegments segments) {
        changes.setMoveSegments(segments);
    }

    /** L2: the partner copies this daemon keeps of the generations of its jobs. */
    public io.tenplex.jobs.tiers.PartnerCopies partnerCopies() {
        return levels.partnerCopies();
    }

    /** L3: the parity blocks this daemon keeps of the generations of its jobs. */
    public io.tenplex.jobs.tiers.ErasureParity erasureParity() {
        return levels.erasureParity();
    }

    /** The other workers' durable directories this daemon reads when recovering around a lost one (L4). */
    public void setDurableCopies(DurableCopies copies) {
        levels.recovery().setDurableCopies(copies);
    }

    /** This daemon's worker number: the daemon of the cluster ({@code --peers}) at its own address, if any. */
    public java.util.OptionalInt selfWorker() {
        return cluster.selfWorker();
    }

    public JobExecutors executors() {
        return exec;
    }

    /** How long finished parts and reconfigurations are kept (tests shorten it; default {@link #RETENTION}). */
    public void setRetention(Duration retention) {
        changes.setRetention(retention);
    }

    /** Every worker's link rate in bits/s used when a reconfiguration names none (0: flows left to TCP). */
    public void setLinkRate(long bitsPerSecond) {
        cluster.setLinkRate(bitsPerSecond);
    }

    /** How long a prepared part waits for the coordinator's commit or abort before it asks the others. */
    public void setPreparedTimeout(Duration timeout) {
        cluster.setPreparedTimeout(timeout);
    }

    /** The daemons of the cluster (worker to address) used when a request names none. */
    public void setDefaultDaemons(Map<Integer, InetSocketAddress> daemons) {
        cluster.setDaemons(daemons);
    }

    /** The address other daemons reach this one at: parts in doubt ask it for the outcome. */
    public void setSelfAddress(InetSocketAddress address) {
        cluster.setSelfAddress(address);
    }

    /** This daemon's {@code host:port} as others reach it ({@code ""} until it serves). */
    public String selfAddress() {
        return cluster.selfAddress();
    }

    /** {@code given}, or the daemon's defaults when it names none. */
    public Map<Integer, InetSocketAddress> daemons(Map<Integer, InetSocketAddress> given) {
        return cluster.daemons(given);
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
        return seal(job, step, rank, world, config, daemons, OptionalInt.empty());
    }

    /**
     * As {@link #seal(String, long, int, int, JsonNode, Map)}, with the number of entries (tensors and
     * files) the rank wrote below {@code save/<rank>} when the request says: a tree that holds another
     * number (the job was removed while the rank saved) is refused, a conflict, and nothing is sealed.
     * The seal, until every daemon was told, excludes a removal of the job ({@link SavesInFlight}).
     */
    public CompletableFuture<Sealed> seal(String job, long step, int rank, int world, JsonNode config,
            Map<Integer, InetSocketAddress> daemons, OptionalInt entries) throws IOException {
        StorePath saved = new JobLayout(job).savedRank(rank);
        SavesInFlight.Pass pass = enterSave(job, "the seal of rank " + rank + " of step " + step);
        try {
            entries.ifPresent(n -> sealing.checkEntries(job, step, rank, saved, n));
            return sealing.seal(job, step, rank, world, config, daemons, saved).whenComplete((s, t) -> pass.close());
        } catch (IOException | RuntimeException e) {
            pass.close();
            throw e;
        }
    }

    /**
     * As {@link #seal(String, long, int, int, JsonNode, Map)}, sealing the tree at {@code saved}; the
     * caller holds a {@link #enterSave pass} for the job until the answer completes.
     */
    @Override
    public CompletableFuture<Sealed> seal(String job, long step, int rank, int world, JsonNode config,
            Map<Integer, InetSocketAddress> daemons, StorePath saved) throws IOException {
        return sealing.seal(job, step, rank, world, config, daemons, saved);
    }

    /** Enters a save of {@code job} in flight here (it waits while a removal of the job runs). */
    @Override
    public SavesInFlight.Pass enterSave(String job, String what) {
        return inFlight.enter(job, what);
    }

    /** The seals and commits in flight here, which a removal of their job excludes. */
    public SavesInFlight savesInFlight() {
        return inFlight;
    }

    /** What {@code rank} of {@code job} loads here: the newer of the latest generation and a reconfiguration's output. */
    @Override
    public LoadChoice loadChoice(String job, int rank) {
        return LoadChoice.choose(store, generations, job, rank);
    }

    /** Ranks of a step were sealed on another daemon; whether the generation is complete. */
    public boolean sealed(String job, long step, List<Integer> ranks, int world, JsonNode config) throws IOException {
        try (SavesInFlight.Pass pass = inFlight.enterNotice(job, "the notice of the seal of ranks " + ranks + " of step "
                + step)) {
            boolean complete = generations.sealed(job, step, ranks, world, config);
            flags.activity().saved(job, step);
            return complete;
        }
    }

    /** This daemon's side of the changes every daemon plans its own part of. */
    public OwnChanges own() {
        return own;
    }

    private final OwnChanges own;


    public PartRunner startPart(PlanPart part) {
        return changes.startPart(part);
    }

    /**
     * Aborts this daemon's part of a plan; one not started here yet is refused if it starts later.
     * Completes once the part has stopped and dropped what it staged (or after a bound).
     */
    public java.util.concurrent.CompletableFuture<io.tenplex.jobs.common.PartStatus> abortPart(String job,
            String planId) {
        return changes.abortPart(job, planId);
    }

    /** @throws StoreException not found when this daemon has no such part */
    public PartRunner part(String job, String planId) {
        return changes.part(job, planId);
    }

    /** @throws StoreException not found when this daemon coordinates no such reconfiguration (any more) */
    public Reconfiguration reconfiguration(String job, String id) {
        return changes.reconfiguration(job, id);
    }

    /** Forgets the finished parts and reconfigurations of a job, and its generations' record. */
    public void forget(String job) {
        changes.forget(job);
        generations.forget(job);
        generations.tiers().forget(job);
        generations.lost().forget(job);
    }

    /** Whether a part or reconfiguration of {@code job} still runs here. */
    public boolean running(String job) {
        return changes.running(job);
    }

    /** How many parts and reconfigurations of {@code job} this daemon keeps. */
    public int kept(String job) {
        return changes.kept(job);
    }

    /** Plans a reconfiguration without starting it. */
    public DryRun dryRun(ReconfigureRequest r) throws IOException {
        return planner.dryRun(r);
    }

    /** Plans before the state is saved (nothing stored or started): for {@link #reconfigure(ReconfigureRequest, PlanAhead)}. */
    public PlanAhead planAhead(ReconfigureRequest r) throws IOException {
        return planAhead(r, false);
    }

    /**
     * As {@link #planAhead(ReconfigureRequest)}; {@code saves}: the ranks train on towards a stop step,
     * so the shared memory their saves will take is touched ahead too, not only the move's (a stop at
     * once would have them save while it is being touched).
     */
    public PlanAhead planAhead(ReconfigureRequest r, boolean saves) throws IOException {
        PlanAhead ahead = planner.planAhead(r);
        changes.prewarm(ahead, cluster.selfWorker(), saves);
        ahead.describedAhead(changes.describeAhead(r, ahead));
        return ahead;
    }

    /** Plans a reconfiguration and starts coordinating it in the background. */
    public Reconfiguration reconfigure(ReconfigureRequest r) throws IOException {
        return reconfigure(r, null);
    }

    /** As {@link #reconfigure(ReconfigureRequest)}, with the plan made ahead when its inputs are still those found. */
    public Reconfiguration reconfigure(ReconfigureRequest r, PlanAhead ahead) throws IOException {
        return changes.start(r, planner.plan(r, false, ahead), () -> newId("p"));
    }

    /**
     * The model spec stored with the job; with partition rules stored instead, the model inferred from
     * its newest complete generation's shards (listed on the daemons of {@code --peers}), then stored.
     */
    public Model storedModel(String job) {
        try {
            return models.stored(job, cluster.daemons(), true, null);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Whether the job has a model spec or partition rules stored: without, only data-parallel changes are planned. */
    public boolean described(String job) {
        return models.described(job);
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
