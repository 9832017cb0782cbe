package io.tenplex.jobs;

import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.server.control.PartStatus;
import io.tenplex.server.control.ValueCopy;
import io.tenplex.server.control.WorkerPlan;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.transform.ExecutionReport;
import io.tenplex.transform.Executor;
import io.tenplex.transform.ShardPlan;
import java.io.IOException;
import java.net.InetSocketAddress;
import io.tenplex.server.peer.DaemonLink;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
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
public final class PartRunner {
    private static final Logger LOG = LoggerFactory.getLogger(PartRunner.class);

    enum State { EXECUTING, PREPARED, FAILED, COMMITTED, ABORTED }

    private final WorkerPlan wp;
    private final TensorStore store;
    private final JobPaths paths;
    private final DaemonLink link;
    private final AtomicLong done = new AtomicLong();
    private final long total;
    private final CompletableFuture<Void> executed;
    private volatile State state = State.EXECUTING;
    private volatile String error = "";
    private volatile ExecutionReport report;
    private final ScheduledExecutorService timer;
    private final Duration preparedTimeout;
    private final InDoubt.Ask inDoubt;
    /** When the part reached a final state (System.nanoTime), 0 while it may still change. */
    private volatile long finishedAt;

    public PartRunner(WorkerPlan wp, TensorStore store, PeerClient peers, ExecutorService readers, ExecutorService background,
            HttpClient http, String token, ScheduledExecutorService timer, Duration defaultPreparedTimeout) {
        this.wp = wp;
        this.timer = timer;
        this.preparedTimeout = wp.getPreparedTimeoutMillis() > 0 ? Duration.ofMillis(wp.getPreparedTimeoutMillis())
                : defaultPreparedTimeout;
        this.inDoubt = new PeerParts(wp, peers.link());
        this.store = store;
        this.link = peers.link();
        this.paths = new JobPaths(wp.getJob(), wp.getSourceDir().isEmpty() ? "save" : wp.getSourceDir(),
                wp.getOutputDir().isEmpty() ? "load" : wp.getOutputDir());
        List<ShardPlan> shards = PlanCodec.shards(wp);
        this.total = shards.stream().mapToLong(s -> s.pieces().stream().mapToLong(p -> p.bytes()).sum()).sum();
        Map<Integer, InetSocketAddress> daemons = new HashMap<>();
        wp.getDaemonsMap().forEach((w, a) -> daemons.put(w, address(a)));
        StoreSource source = new StoreSource(store, wp.getWorker(), paths,
                new PeerSource(peers, daemons, paths, Duration.ofMinutes(10))); // per piece; dead peers fail fast on connect
        StagingSink sink = new StagingSink(store, paths, wp.getPlanId());
        this.executed = CompletableFuture.runAsync(() -> {
            try {
                report = new Executor(source, readers, 2, wp.getFlowRatesMap()).run(shards,
                        r -> PlanCodec.device(wp.getSourceDevices(r)), sink, done, wp.getWorker());
                copyValues(daemons, http, token);
                for (io.tenplex.server.control.GeneratedFile g : wp.getGeneratedList()) {
                    SmallFiles.put(store, paths.staged(wp.getPlanId(), g.getDestRank(), g.getPath()),
                            g.getContent().toByteArray());
                }
                synchronized (this) {
                    if (state == State.EXECUTING) {
                        state = State.PREPARED;
                        finishedAt = 0;
                        awaitDecision();
                        return;
                    }
                }
                dropStaging(); // aborted while executing
            } catch (Exception e) {
                if (e instanceof io.tenplex.transform.ExecutionFailedException f && f.report() != null) {
                    report = f.report(); // a failed part still reports its retries and corrupted transfers
                }
                sink.abort();
                dropStaging();
                error = e.getMessage() == null ? e.toString() : e.getMessage();
                state = State.FAILED;
                finishedAt = System.nanoTime();
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
            }
        }, background);
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
        List<Integer> participants = wp.getParticipantsList();
        InDoubt.Decision d = InDoubt.decide(wp.getWorker(), participants, inDoubt);
        LOG.info("job={} plan={} in doubt after {} ms: {}", wp.getJob(), wp.getPlanId(), preparedTimeout.toMillis(), d);
        try {
            switch (d) {
                case COMMIT -> commit();
                case ABORT -> abort();
                case WAIT -> awaitDecision();
            }
        } catch (StoreException e) {
            LOG.warn("job={} plan={} resolving in doubt: {}", wp.getJob(), wp.getPlanId(), e.getMessage());
        }
    }

    public long finishedAt() {
        return finishedAt;
    }

    /**
     * Whether the part reached a final state more than {@code age} ago, and more than twice its
     * prepared timeout ago (parts in doubt of the same plan may still ask it): it can be forgotten.
     */
    public boolean finishedBefore(long nanoTime, long ageNanos) {
        long f = finishedAt;
        return f != 0 && nanoTime - f > Math.max(ageNanos, 2 * preparedTimeout.toNanos());
    }

    public static InetSocketAddress address(String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException("daemon address '" + hostPort + "' is not host:port");
        }
        return new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    }

    /** Non-tensor values: linked when saved on this worker, else fetched whole from the holder's daemon. */
    private void copyValues(Map<Integer, InetSocketAddress> daemons, HttpClient http, String token) throws IOException,
            InterruptedException {
        for (ValueCopy v : wp.getValuesList()) {
            StorePath from = paths.saved(v.getSourceRank(), v.getKey());
            StorePath to = paths.staged(wp.getPlanId(), v.getDestRank(), v.getKey());
            int holder = wp.getSourceDevices(v.getSourceRank()).getWorker();
            if (holder == wp.getWorker()) {
                store.link(from, to, true);
                continue;
            }
            InetSocketAddress a = daemons.get(holder);
            HttpResponse<byte[]> r = get(http, token, a, "/api/v1/files" + from);
            boolean tensor = r.statusCode() == 404 && new String(r.body(), StandardCharsets.UTF_8).contains("is a tensor");
            if (tensor) { // a tensor inside a value (Megatron's grad scaler)
                r = get(http, token, a, "/api/v1/tensors" + from);
            }
            if (r.statusCode() != 200) {
                throw new IOException("value " + v.getKey() + " of rank " + v.getSourceRank() + " from " + a + ": "
                        + r.statusCode() + " " + new String(r.body(), StandardCharsets.UTF_8).strip());
            }
            String problem = TransferChecksum.problem(r.headers().firstValue("x-tensor-crc32c").orElse(null), r.body());
            if (problem != null) {
                throw new IOException("value " + v.getKey() + " of rank " + v.getSourceRank() + " from " + a + ": "
                        + problem);
            }
            if (tensor) {
                io.tenplex.ptc.TensorMeta meta = new io.tenplex.ptc.TensorMeta(io.tenplex.ptc.DType.fromName(
                        r.headers().firstValue("x-tensor-dtype").orElse("")), io.tenplex.ptc.Shape.parse(
                                r.headers().firstValue("x-tensor-dims").orElse("")));
                BlobWriter w = BlobWriter.allocate(store.allocator(), r.body().length, store.checksumBlock());
                w.append(ByteBuffer.wrap(r.body()));
                store.putTensor(to, meta, w.take(), w.checksums(), true);
            } else {
                SmallFiles.put(store, to, r.body());
            }
        }
    }

    private HttpResponse<byte[]> get(HttpClient http, String token, InetSocketAddress a, String path)
            throws IOException, InterruptedException {
        HttpRequest.Builder get = HttpRequest.newBuilder(link.uri(a, path)).header("x-want-crc32c", "1");
        if (token != null) {
            get.header("Authorization", "Bearer " + token);
        }
        return http.send(get.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private StorePath staging() {
        return StorePath.parse("/job/" + wp.getJob() + "/staging/" + wp.getPlanId());
    }

    private void dropStaging() {
        try {
            store.delete(staging());
        } catch (StoreException e) {
            // nothing staged
        }
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
            throw StoreException.conflict("cannot commit plan " + wp.getPlanId() + " in state "
                    + state.name().toLowerCase(java.util.Locale.ROOT) + (error.isEmpty() ? "" : ": " + error));
        }
        StorePath staged = StorePath.parse(staging() + "/load");
        StorePath load = StorePath.parse("/job/" + wp.getJob() + "/load");
        if (store.stat(staged).isPresent()) {
            store.move(staged, load);
        }
        SmallFiles.put(store, StorePath.parse("/job/" + wp.getJob() + "/iter"), Long.toString(wp.getStep()));
        dropStaging();
        state = State.COMMITTED;
        finishedAt = System.nanoTime();
        return status();
    }

    /** Drops the staged generation; the previous one stays as it was. */
    public synchronized PartStatus abort() {
        if (state == State.COMMITTED) {
            throw StoreException.conflict("plan " + wp.getPlanId() + " is already committed");
        }
        if (state != State.EXECUTING) {
            dropStaging();
        }
        if (state != State.FAILED) {
            state = State.ABORTED; // an execution still running cleans up when it ends
        }
        if (finishedAt == 0) {
            finishedAt = System.nanoTime();
        }
        return status();
    }

    public PartStatus status() {
        PartStatus.Builder b = PartStatus.newBuilder().setPlanId(wp.getPlanId())
                .setState(state.name().toLowerCase(java.util.Locale.ROOT)).setError(error).setBytesTotal(total)
                .setBytesDone(done.get());
        ExecutionReport r = report;
        if (r != null) {
            b.setLocalBytes(r.localBytes()).setRemoteBytes(r.remoteBytes()).setRetries(r.retries())
                    .setCorrupted(r.corrupted()).setExecuteNanos(r.nanos());
        }
        return b.build();
    }
}
