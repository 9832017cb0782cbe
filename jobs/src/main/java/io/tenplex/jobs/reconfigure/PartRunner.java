package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.Rollback;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.transform.ExecutionFailedException;
import io.tenplex.transform.ExecutionReport;
import io.tenplex.transform.Executor;
import io.tenplex.transform.ShardSource;
import io.tenplex.transform.ShardPlan;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One daemon's part of a reconfiguration: executes its shards into staging, then waits for the
 * coordinator's commit (staging becomes {@code /job/<job>/load}, atomically) or abort (staging is
 * deleted). Commit and abort are idempotent; a failed part leaves no staging behind and the
 * previous generation untouched. A prepared part that hears nothing within its prepared timeout
 * resolves itself by asking the other participants and the coordinator ({@link InDoubt}).
 */
public final class PartRunner implements Registry.Finishing {
    private static final Logger LOG = LoggerFactory.getLogger(PartRunner.class);
    /** How long one piece may take; dead peers fail fast on connect. */
    private static final Duration PIECE_TIMEOUT = Duration.ofMinutes(10);

    enum State { EXECUTING, PREPARED, FAILED, COMMITTED, ABORTED }

    /** What a part runs with: the daemon's store, the other daemons, and the executors it uses. */
    public record Context(TensorStore store, DaemonClient client, RangeReads reads, ExecutorService readers,
            ExecutorService background, ScheduledExecutorService timer, Duration defaultPreparedTimeout,
            Generations generations, io.tenplex.store.memory.SharedSegments segments) {
    }

    private final PlanPart part;
    private final TensorStore store;
    private final Generations generations;
    private final JobLayout paths;
    private final DaemonClient client;
    private final AtomicLong done = new AtomicLong();
    private final long total;
    private final CompletableFuture<Void> executed;
    private volatile State state = State.EXECUTING;
    private volatile String error = "";
    private volatile ExecutionReport report;
    /** Why the new shards took slower memory than recycled shared memory, or null ({@link StagingSink#slowMemory}). */
    private volatile String slowMemory;
    /** The run moving the part's bytes, once started (stopped when the part is aborted). */
    private volatile Executor moving;
    private final ScheduledExecutorService timer;
    private final Duration preparedTimeout;
    private final InDoubt.Ask inDoubt;
    /** When the part reached a final state (System.nanoTime), 0 while it may still change. */
    private volatile long finishedAt;
    /** The old ranks still being rebuilt elsewhere, each tensor read last once streamed or its rank published. */
    private final RebuiltRanks rebuilt;

    /** Starts executing {@code part} on the context's background executor. */
    public PartRunner(PlanPart part, Context ctx) {
        this.part = part;
        this.timer = ctx.timer();
        this.preparedTimeout = part.preparedTimeoutMillis() > 0 ? Duration.ofMillis(part.preparedTimeoutMillis())
                : ctx.defaultPreparedTimeout();
        this.inDoubt = PeerParts.of(part, ctx.client());
        this.store = ctx.store();
        this.generations = ctx.generations();
        this.client = ctx.client();
        this.paths = part.paths();
        this.total = part.shards().stream().mapToLong(s -> s.pieces().stream().mapToLong(p -> p.bytes()).sum()).sum();
        Map<Integer, InetSocketAddress> daemons = new HashMap<>();
        part.daemons().forEach((w, a) -> daemons.put(w, DaemonClient.address(a)));
        this.rebuilt = new RebuiltRanks(part, ctx.client(), daemons, ctx.timer(), PIECE_TIMEOUT);
        ShardSource source = rebuilt.around(new StoreSource(store, part.worker(), paths,
                new PeerSource(ctx.reads(), daemons, paths, PIECE_TIMEOUT)), new StoreSource(store, part.worker(),
                paths::streamed, new PeerSource(ctx.reads(), daemons, paths::streamed, PIECE_TIMEOUT)), PIECE_TIMEOUT);
        StagingSink sink = new StagingSink(store, paths, part.planId(), ctx.segments());
        this.executed = CompletableFuture.runAsync(() -> execute(source, sink, daemons, ctx.readers()), ctx.background());
    }

    private void execute(ShardSource source, StagingSink sink, Map<Integer, InetSocketAddress> daemons,
            ExecutorService readers) {
        try {
            Executor run = new Executor(source, readers, 2, part.flowRates(), rebuilt.ranks());
            moving = run;
            if (state == State.ABORTED) { // aborted before the run started: nothing is opened or read
                dropStaging();
                return;
            }
            report = run.run(part.shards(), r -> part.sourceDevices().get(r), sink, done, part.worker());
            sink.finish();
            slowMemory = sink.slowMemory();
            if (slowMemory != null) {
                LOG.info("job={} plan={} worker={}: the move was slower than it could be: {}", part.job(), part.planId(),
                        part.worker(), slowMemory);
            }
            copyValues(daemons);
            for (PlanPart.Generated g : part.generated()) {
                SmallFiles.put(store, paths.staged(part.planId(), g.destRank(), g.path()), g.content());
            }
            synchronized (this) {
                if (state == State.EXECUTING) {
                    state = State.PREPARED;
                    finishedAt = 0;
                    PartStatus p = status();
                    LOG.info("part prepared job={} plan={} worker={} bytes_local={} bytes_remote={} retries={} duration_ms={}",
                            part.job(), part.planId(), part.worker(), p.localBytes(), p.remoteBytes(), p.retries(), p.executeNanos() / 1_000_000);
                    awaitDecision();
                    return;
                }
            }
            sink.abort(); // aborted while executing: no shard the run left open outlives the part
            dropStaging();
        } catch (Exception e) {
            failed(e, sink);
        }
    }

    /** The run ended with {@code e}: a failure, or the abort that stopped it moving. */
    private void failed(Exception e, StagingSink sink) {
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        if (e instanceof ExecutionFailedException f && f.report() != null) {
            report = f.report(); // a failed part still reports its retries and corrupted transfers
        }
        rebuilt.cancel("part failed"); // no more asking for ranks it will not read
        sink.abort();
        dropStaging();
        synchronized (this) {
            if (state == State.ABORTED) { // stopped moving by the abort: nothing failed
                LOG.info("job={} plan={} worker={} stopped moving: aborted", part.job(), part.planId(), part.worker());
                return;
            }
            error = e.getMessage() == null ? e.toString() : e.getMessage();
            state = State.FAILED;
            finishedAt = System.nanoTime();
        }
        LOG.warn("part failed job={} plan={} worker={}: {}", part.job(), part.planId(), part.worker(), error);
    }

    /** A prepared part that hears nothing within its timeout asks the others ({@link InDoubt}). */
    private void awaitDecision() {
        try {
            timer.schedule(this::resolve, preparedTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the daemon is closing: its staging goes with it
        }
    }

    private void resolve() {
        if (state != State.PREPARED) {
            return;
        }
        InDoubt.Decision d = InDoubt.decide(part.worker(), part.participants(), inDoubt);
        LOG.info("job={} plan={} in doubt after {} ms: {}", part.job(), part.planId(), preparedTimeout.toMillis(), d);
        try {
            switch (d) {
                case COMMIT -> commit();
                case ABORT -> abort();
                case WAIT -> awaitDecision();
            }
        } catch (StoreException e) {
            LOG.warn("job={} plan={} resolving in doubt: {}", part.job(), part.planId(), e.getMessage());
        }
    }

    @Override
    public long finishedAt() {
        return finishedAt;
    }

    /**
     * Whether the part reached a final state more than {@code age} ago, and more than twice its
     * prepared timeout ago (parts in doubt of the same plan may still ask it): it can be forgotten.
     */
    @Override
    public boolean expired(long nanoTime, long ageNanos) {
        long f = finishedAt;
        return f != 0 && nanoTime - f > Math.max(ageNanos, 2 * preparedTimeout.toNanos());
    }


    /** Non-tensor values: linked when saved on this worker, else fetched whole from the holder's daemon. */
    private void copyValues(Map<Integer, InetSocketAddress> daemons) throws IOException, InterruptedException {
        for (PlanPart.Value v : part.values()) {
            rebuilt.await(v.sourceRank(), PIECE_TIMEOUT);
            StorePath from = paths.saved(v.sourceRank(), v.key());
            StorePath to = paths.staged(part.planId(), v.destRank(), v.key());
            int holder = part.sourceDevices().get(v.sourceRank()).worker();
            if (holder == part.worker()) {
                store.link(from, to, true);
                continue;
            }
            InetSocketAddress a = daemons.get(holder);
            String what = "value " + v.key() + " of rank " + v.sourceRank() + " from " + a + ": ";
            DaemonClient.SavedValue value;
            try {
                value = client.readValue(a, from).get();
            } catch (ExecutionException e) {
                throw new IOException(what + e.getCause().getMessage(), e.getCause());
            }
            String problem = TransferChecksum.problem(value.crc32c(), value.bytes());
            if (problem != null) {
                throw new IOException(what + problem);
            }
            if (value.tensor() != null) { // a tensor inside a value (Megatron's grad scaler)
                BlobWriter w = BlobWriter.allocate(store.allocator(), value.bytes().length, store.checksumBlock());
                w.append(ByteBuffer.wrap(value.bytes()));
                store.putTensor(to, value.tensor(), w.take(), w.checksums(), true);
            } else {
                SmallFiles.put(store, to, value.bytes());
            }
        }
    }

    private StorePath staging() {
        return paths.staging(part.planId());
    }

    private void dropStaging() {
        try {
            store.delete(staging());
        } catch (StoreException e) {
            // nothing staged
        }
    }

    /**
     * Completes with the status once the run has ended, so after an abort what it staged is dropped
     * (the pieces in flight end first); after {@code limit} with the status as it is then (the run
     * still drops its staging when it ends).
     */
    public CompletableFuture<PartStatus> stopped(java.time.Duration limit) {
        return executed.handle((v, t) -> (Void) null).completeOnTimeout(null, limit.toMillis(), TimeUnit.MILLISECONDS)
                .thenApply(x -> status());
    }

    /** Completes when execution has ended (prepared or failed). */
    public CompletableFuture<PartStatus> prepared() {
        return executed.handle((v, t) -> status());
    }

    /** Switches {@code /job/<job>/load} to the staged generation and records the step. */
    public synchronized PartStatus commit() {
        if (state == State.COMMITTED) {
            return status();
        }
        if (state != State.PREPARED) {
            throw StoreException.conflict("cannot commit plan " + part.planId() + " in state "
                    + state.name().toLowerCase(Locale.ROOT) + (error.isEmpty() ? "" : ": " + error));
        }
        StorePath staged = staging().child("load");
        StorePath load = paths.load();
        if (store.stat(staged).isPresent()) {
            store.move(staged, load);
        }
        SmallFiles.put(store, paths.iter(), Long.toString(part.step()));
        Rollback.after(generations, part);
        dropStaging();
        state = State.COMMITTED;
        finishedAt = System.nanoTime();
        LOG.info("part committed job={} plan={} worker={} step={}", part.job(), part.planId(), part.worker(), part.step());
        return status();
    }

    /** Drops the staged generation; the previous one stays as it was. */
    public synchronized PartStatus abort() {
        if (state == State.COMMITTED) {
            throw StoreException.conflict("plan " + part.planId() + " is already committed");
        }
        if (state != State.EXECUTING) {
            dropStaging();
        }
        if (state == State.EXECUTING || state == State.PREPARED) {
            LOG.info("job={} plan={} worker={} aborted while {}", part.job(), part.planId(), part.worker(),
                    state.name().toLowerCase(Locale.ROOT));
        }
        if (state != State.FAILED) {
            state = State.ABORTED; // an execution still running stops taking pieces and cleans up when it ends
        }
        Executor run = moving;
        if (run != null) {
            run.cancel("plan " + part.planId() + " was aborted");
        }
        rebuilt.cancel("plan " + part.planId() + " was aborted");
        if (finishedAt == 0) {
            finishedAt = System.nanoTime();
        }
        return status();
    }

    public PartStatus status() {
        ExecutionReport r = report;
        String name = state.name().toLowerCase(Locale.ROOT);
        if (r == null) {
            return new PartStatus(part.planId(), name, error, total, done.get(), 0, 0, 0, 0, 0, null);
        }
        return new PartStatus(part.planId(), name, error, total, done.get(), r.localBytes(), r.remoteBytes(), r.retries(),
                r.corrupted(), r.nanos(), slowMemory);
    }
}
