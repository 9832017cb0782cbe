package io.tenplex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The daemons of {@link CoordinatorBench}, in memory: every daemon is healthy; an old rank's saved
 * tree is its shards and the model's values under their keys (flat layout, each path a string of its own, as parsed from a
 * listing); a change's definition is answered by {@link PlanningDaemons}; a description sent is held
 * until the coordinator's uplink has sent it (one sender at the given rate); parts prepare and commit at once.
 */
final class CoordinatorBenchClient implements DaemonClient, AutoCloseable {
    private final Ptc from;
    private final String job;
    private final long bitsPerSecond;
    private final ExecutorService uplink = Executors.newSingleThreadExecutor();
    private final AtomicLong posted = new AtomicLong();

    CoordinatorBenchClient(Ptc from, String job, long bitsPerSecond) {
        this.from = from;
        this.job = job;
        this.bitsPerSecond = bitsPerSecond;
    }

    long posted() {
        return posted.get();
    }

    @Override
    public CompletableFuture<Void> health(InetSocketAddress daemon) {
        return CompletableFuture.completedFuture(null);
    }

    /** Only Tenplex-Central's coordinator sends parts; every other change is planned by each daemon. */
    @Override
    public CompletableFuture<PartStatus> postPart(InetSocketAddress daemon, PlanPart part) {
        return unsupported();
    }

    /** The daemons' side when every daemon plans its own part. */
    final PlanningDaemons planning = new PlanningDaemons();

    @Override
    public CompletableFuture<ChangeAnswer> postChange(InetSocketAddress daemon, int worker,
            io.tenplex.jobs.common.ChangeSpec spec) {
        posted.incrementAndGet();
        return CompletableFuture.supplyAsync(() -> planning.post(worker, spec), uplink);
    }

    @Override
    public CompletableFuture<ChangeAnswer> postChangeAhead(InetSocketAddress daemon, int worker,
            io.tenplex.jobs.common.ChangeSpec spec) {
        return CompletableFuture.supplyAsync(() -> planning.planAhead(spec), uplink);
    }

    /**
     * A daemon checking its own ranks' trees: each rank's layout built from its flat tree and digested,
     * ranks of one tree sharing the work, as a daemon does for its own ranks. Here every rank of a stage
     * has the same tree, and the stage's layout is built once for all simulated daemons: they check in
     * parallel, so one daemon's work (at most its 8 ranks') is the critical path, not 512 daemons' in a row.
     */
    @Override
    public synchronized CompletableFuture<java.util.Map<Integer, String>> describeTrees(InetSocketAddress daemon,
            String job, String sourceDir, List<Integer> ranks) {
        java.util.Map<Integer, String> out = new java.util.TreeMap<>();
        for (int rank : ranks) {
            int stage = from.layout().coord(rank, from.config()).pp();
            String known = byStage.get(stage);
            if (known != null) {
                out.put(rank, known);
                continue;
            }
            List<io.tenplex.jobs.common.CheckpointLayout.Item> items = new ArrayList<>();
            for (TreeEntry e : listTree(daemon, StorePath.parse("/job/" + job + "/" + sourceDir + "/" + rank)).join()) {
                items.add(new io.tenplex.jobs.common.CheckpointLayout.Item(e.path().substring(e.path().lastIndexOf('/')
                        + 1), e.tensor(), e.dims(), e.meta()));
            }
            out.put(rank, checked.computeIfAbsent(items, x -> {
                byte[] b = io.tenplex.jobs.reconfigure.Descriptions.layout(io.tenplex.jobs.common.CheckpointLayout.of(x));
                String d = io.tenplex.jobs.reconfigure.Descriptions.digest(b);
                layouts.put(d, b);
                return d;
            }));
            byStage.put(stage, out.get(rank));
        }
        int w = Integer.parseInt(daemon.getHostString().substring("worker".length()));
        out.values().forEach(d -> planning.hold(w, d, layouts.get(d))); // a daemon keeps the layouts it checked
        return CompletableFuture.completedFuture(out);
    }

    private final java.util.Map<List<io.tenplex.jobs.common.CheckpointLayout.Item>, String> checked = new java.util.HashMap<>();
    private final java.util.Map<String, byte[]> layouts = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.Map<Integer, String> byStage = new java.util.HashMap<>();

    @Override
    public CompletableFuture<byte[]> description(InetSocketAddress daemon, String job, String digest) {
        return CompletableFuture.completedFuture(layouts.get(digest));
    }

    @Override
    public CompletableFuture<Void> putDescription(InetSocketAddress daemon, String job, String digest, byte[] bytes) {
        int w = Integer.parseInt(daemon.getHostString().substring("worker".length()));
        return CompletableFuture.runAsync(() -> {
            LockSupport.parkNanos(bytes.length * 8L * 1_000_000_000L / bitsPerSecond); // the body on the wire
            planning.put(w, digest, bytes);
        }, uplink);
    }

    @Override
    public CompletableFuture<PartStatus> partAction(InetSocketAddress daemon, String job, String planId,
            PartAction action) {
        return CompletableFuture.completedFuture(status(planId, switch (action) {
            case PREPARE -> "prepared";
            case COMMIT -> "committed";
            case ABORT -> "aborted";
        }));
    }

    private static PartStatus status(String planId, String state) {
        return new PartStatus(planId, state, "", 0, 0, 0, 0, 0, 0, 0, null);
    }

    @Override
    public CompletableFuture<PartStatus> partStatus(InetSocketAddress daemon, String job, String planId) {
        return CompletableFuture.completedFuture(status(planId, "running"));
    }

    @Override
    public CompletableFuture<String> reconfigurationState(InetSocketAddress coordinator, String job, String id) {
        return unsupported();
    }

    /** An old rank's tree: {@code .../save/<rank>/<key>} for each shard it holds. */
    @Override
    public CompletableFuture<List<TreeEntry>> listTree(InetSocketAddress daemon, StorePath dir) {
        String d = dir.toString();
        int rank = Integer.parseInt(d.substring(d.lastIndexOf('/') + 1));
        List<TreeEntry> out = new ArrayList<>();
        for (Ptc.Shard s : from.shards(rank)) {
            out.add(new TreeEntry(d + "/" + s.key(), true, s.shape().rank(), new TensorMeta(s.spec().dtype(),
                    s.shape())));
        }
        for (io.tenplex.ptc.ValueSpec v : from.model().values()) {
            out.add(new TreeEntry(d + "/" + v.key(), false, 0));
        }
        return CompletableFuture.completedFuture(out);
    }

    @Override
    public CompletableFuture<SavedValue> readValue(InetSocketAddress daemon, StorePath path) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Void> sealed(InetSocketAddress daemon, String job, long step, List<Integer> ranks,
            int world, JsonNode config) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Void> raiseStop(InetSocketAddress daemon, String job, OptionalLong atStep,
            String reason) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Void> clearStop(InetSocketAddress daemon, String job) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Void> removeJob(InetSocketAddress daemon, String job, RemovalStep step) {
        return unsupported();
    }

    @Override
    public CompletableFuture<JsonNode> parallelize(String daemon, String job, JsonNode request) {
        return unsupported();
    }

    @Override
    public CompletableFuture<JsonNode> startResourceChange(String daemon, String job, JsonNode request) {
        return unsupported();
    }

    @Override
    public CompletableFuture<JsonNode> awaitResourceChange(String daemon, String job, String id, Duration wait) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Optional<byte[]>> readFile(String daemon, StorePath path) {
        return unsupported();
    }

    @Override
    public CompletableFuture<Void> writeFile(String daemon, StorePath path, byte[] bytes) {
        return unsupported();
    }

    private static <T> CompletableFuture<T> unsupported() {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("not part of the coordinator bench"));
    }

    @Override
    public void close() throws InterruptedException {
        uplink.shutdownNow();
        uplink.awaitTermination(10, TimeUnit.SECONDS);
    }
}
