package io.tenplex.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.DaemonCallException;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.reconfigure.PartRunner;
import io.tenplex.ptc.Region;
import io.tenplex.store.DataRef;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.RegionRead;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.zip.CRC32C;

/**
 * An in-memory {@link DaemonClient} and {@link RangeReads}: every call goes straight to the
 * {@link Jobs} and store of the simulated daemon at that address, on an executor (as an answer
 * would come from the network). Daemons can be made unreachable, and a daemon can be told to refuse
 * prepare. Store errors become {@link DaemonCallException}s of the matching kind.
 */
public final class FakeDaemonClient implements DaemonClient, RangeReads {
    /** One simulated daemon: its job lifecycle and its store. */
    public record Daemon(Jobs jobs, TensorStore store) {
    }

    private final Map<InetSocketAddress, Daemon> daemons = new ConcurrentHashMap<>();
    private final Map<InetSocketAddress, Error> failingPosts = new ConcurrentHashMap<>();
    private final Set<InetSocketAddress> unreachable = ConcurrentHashMap.newKeySet();
    private final Set<InetSocketAddress> refusingPrepare = ConcurrentHashMap.newKeySet();
    private final Set<InetSocketAddress> losingCommits = ConcurrentHashMap.newKeySet();
    private final ExecutorService network;
    private volatile List<StorePath> heldBelow = List.of();
    private volatile StorePath failingBelow;
    private volatile CompletableFuture<Void> heldRelease = CompletableFuture.completedFuture(null);
    private volatile long heldFrom;
    private volatile java.util.function.Consumer<StorePath> served = p -> { };

    /** @param network the executor on which calls are answered */
    public FakeDaemonClient(ExecutorService network) {
        this.network = network;
    }

    public void add(InetSocketAddress address, Daemon daemon) {
        daemons.put(address, daemon);
    }

    /** Range reads below {@code prefix} start once {@code release} completes (no thread waits meanwhile). */
    public void holdRangeReadsBelow(StorePath prefix, CompletableFuture<Void> release) {
        holdRangeReadsBelow(prefix, release, 0);
    }

    /**
     * As {@link #holdRangeReadsBelow(StorePath, CompletableFuture)}, holding only reads whose region
     * starts at index {@code from} or later in its first dimension (a chunk of a parity block past an offset).
     */
    public void holdRangeReadsBelow(StorePath prefix, CompletableFuture<Void> release, long from) {
        holdRangeReadsBelow(List.of(prefix), release, from);
    }

    /** As {@link #holdRangeReadsBelow(StorePath, CompletableFuture, long)}, for reads below any of {@code prefixes}. */
    public void holdRangeReadsBelow(List<StorePath> prefixes, CompletableFuture<Void> release, long from) {
        heldRelease = release;
        heldFrom = from;
        heldBelow = List.copyOf(prefixes);
    }

    /** {@code observer} hears the path of every range read answered with its bytes. */
    public void onRangeRead(java.util.function.Consumer<StorePath> observer) {
        served = observer;
    }

    /** Range reads below {@code prefix} fail with an {@link IOException} (null: they answer again). */
    public void failRangeReadsBelow(StorePath prefix) {
        failingBelow = prefix;
    }

    /** Calls to {@code address} fail as if its daemon were down (or answer again). */
    public void setUnreachable(InetSocketAddress address, boolean down) {
        if (down) {
            unreachable.add(address);
        } else {
            unreachable.remove(address);
        }
    }

    /**
     * Posting a part or a change's definition to {@code address} throws {@code e} in the caller's
     * thread (an encoder out of heap).
     */
    public void failPostsWith(InetSocketAddress address, Error e) {
        failingPosts.put(address, e);
    }

    /** The daemon at {@code address} answers prepare with an error at once, while its part still moves. */
    public void refusePrepareAtOnce(InetSocketAddress address) {
        refusingAtOnce.add(address);
    }

    private final Set<InetSocketAddress> refusingAtOnce = ConcurrentHashMap.newKeySet();

    /** The daemon at {@code address} answers prepare with an error, once its part has moved its bytes. */
    public void refusePrepare(InetSocketAddress address) {
        refusingPrepare.add(address);
    }

    /** Commits sent to {@code address} never arrive (the call fails; the part stays prepared, in doubt). */
    public void loseCommitsTo(InetSocketAddress address) {
        losingCommits.add(address);
    }

    private <T> CompletableFuture<T> at(InetSocketAddress a, Callable<T> call) {
        CompletableFuture<T> out = new CompletableFuture<>();
        network.execute(() -> {
            try {
                if (unreachable.contains(a) || !daemons.containsKey(a)) {
                    throw new ConnectException("connection refused: " + a);
                }
                out.complete(call.call());
            } catch (StoreException e) {
                out.completeExceptionally(refusal(e));
            } catch (IllegalArgumentException e) {
                out.completeExceptionally(new DaemonCallException(DaemonCallException.Kind.OTHER, 400, e.getMessage()));
            } catch (Exception e) {
                out.completeExceptionally(e);
            }
        });
        return out;
    }

    private static DaemonCallException refusal(StoreException e) {
        return switch (e.kind()) {
            case NOT_FOUND -> new DaemonCallException(DaemonCallException.Kind.NOT_FOUND, 404, e.getMessage());
            case CONFLICT -> new DaemonCallException(DaemonCallException.Kind.CONFLICT, 409, e.getMessage());
            default -> new DaemonCallException(DaemonCallException.Kind.OTHER, 400, e.getMessage());
        };
    }

    private Daemon d(InetSocketAddress a) {
        return daemons.get(a);
    }

    @Override
    public CompletableFuture<Void> health(InetSocketAddress daemon) {
        return at(daemon, () -> null);
    }

    @Override
    public CompletableFuture<PartStatus> postPart(InetSocketAddress daemon, PlanPart part) {
        Error e = failingPosts.get(daemon);
        if (e != null) {
            throw e; // as a client that runs out of heap encoding the part, in the caller's thread
        }
        return at(daemon, () -> d(daemon).jobs().startPart(part).status());
    }

    /** The daemon at {@code address} answers another plan digest than it planned (a daemon of another version). */
    public void skewPlanDigest(InetSocketAddress address) {
        skewed.add(address);
    }

    private final Set<InetSocketAddress> skewed = ConcurrentHashMap.newKeySet();

    @Override
    public CompletableFuture<ChangeAnswer> postChange(InetSocketAddress daemon, int worker,
            io.tenplex.jobs.common.ChangeSpec spec) {
        Error e = failingPosts.get(daemon);
        if (e != null) {
            throw e;
        }
        return at(daemon, () -> {
            ChangeAnswer a = d(daemon).jobs().own().start(spec, worker);
            return skewed.contains(daemon) && a.status() != null
                    ? new ChangeAnswer(a.status(), "f".repeat(64), a.missing()) : a;
        });
    }

    @Override
    public CompletableFuture<ChangeAnswer> postChangeAhead(InetSocketAddress daemon, int worker,
            io.tenplex.jobs.common.ChangeSpec spec) {
        return at(daemon, () -> d(daemon).jobs().own().planAhead(spec, worker));
    }

    @Override
    public CompletableFuture<Map<Integer, String>> describeTrees(InetSocketAddress daemon, String job, String sourceDir,
            List<Integer> ranks) {
        return at(daemon, () -> d(daemon).jobs().own().describeTrees(job, sourceDir, ranks));
    }

    @Override
    public CompletableFuture<Map<Integer, Map<String, String>>> digestValues(InetSocketAddress daemon, String job,
            String sourceDir, Map<Integer, List<String>> values) {
        return at(daemon, () -> d(daemon).jobs().own().digestValues(job, sourceDir, values));
    }

    @Override
    public CompletableFuture<byte[]> description(InetSocketAddress daemon, String job, String digest) {
        return at(daemon, () -> {
            byte[] b = d(daemon).jobs().own().descriptions().get(digest);
            if (b == null) {
                throw new DaemonCallException(DaemonCallException.Kind.NOT_FOUND, 404, "no description " + digest);
            }
            return b;
        });
    }

    @Override
    public CompletableFuture<Void> putDescription(InetSocketAddress daemon, String job, String digest, byte[] bytes) {
        descriptionsSent.merge(digest, 1, Integer::sum);
        return at(daemon, () -> {
            d(daemon).jobs().own().descriptions().put(digest, bytes);
            return null;
        });
    }

    @Override
    public CompletableFuture<PartStatus> partAction(InetSocketAddress daemon, String job, String planId,
            PartAction action) {
        if (action == PartAction.PREPARE && refusingAtOnce.contains(daemon)) {
            return at(daemon, () -> {
                throw new DaemonCallException(DaemonCallException.Kind.OTHER, 500, "refused to prepare");
            });
        }
        if (action == PartAction.PREPARE && refusingPrepare.contains(daemon)) { // once its part has moved its bytes
            return at(daemon, () -> d(daemon).jobs().part(job, planId)).thenCompose(p -> p.prepared()).thenApply(s -> {
                throw new java.util.concurrent.CompletionException(new DaemonCallException(
                        DaemonCallException.Kind.OTHER, 500, "refused to prepare"));
            });
        }
        if (action == PartAction.COMMIT && losingCommits.contains(daemon)) {
            return CompletableFuture.failedFuture(new java.net.SocketTimeoutException("commit to " + daemon + " lost"));
        }
        if (action == PartAction.ABORT) {
            return at(daemon, () -> d(daemon).jobs().abortPart(job, planId)).thenCompose(f -> f);
        }
        return at(daemon, () -> d(daemon).jobs().part(job, planId)).thenCompose(p -> switch (action) {
            case PREPARE -> p.prepared();
            case COMMIT -> at(daemon, p::commit);
            case ABORT -> throw new IllegalStateException("answered above");
        });
    }

    @Override
    public CompletableFuture<PartStatus> partStatus(InetSocketAddress daemon, String job, String planId) {
        return at(daemon, () -> d(daemon).jobs().part(job, planId).status());
    }

    @Override
    public CompletableFuture<String> reconfigurationState(InetSocketAddress coordinator, String job, String id) {
        return at(coordinator, () -> d(coordinator).jobs().reconfiguration(job, id).state().name()
                .toLowerCase(Locale.ROOT));
    }

    @Override
    public CompletableFuture<List<TreeEntry>> listTree(InetSocketAddress daemon, StorePath dir) {
        return at(daemon, () -> {
            TensorStore store = d(daemon).store();
            if (store.stat(dir).isEmpty()) {
                return List.of();
            }
            List<TreeEntry> out = new ArrayList<>();
            for (Entry e : store.walk(dir, false)) {
                boolean tensor = e.type() == EntryType.TENSOR;
                out.add(new TreeEntry(e.path().toString(), tensor, tensor ? e.meta().shape().rank() : 0,
                        tensor ? e.meta() : null));
            }
            return out;
        });
    }

    private final Map<String, Integer> descriptionsSent = new ConcurrentHashMap<>();

    /** How many times the description with {@code digest} was sent to a daemon so far. */
    int descriptionsSent(String digest) {
        return descriptionsSent.getOrDefault(digest, 0);
    }

    /** How many times each description was sent to a daemon so far, by digest. */
    Map<String, Integer> descriptionsSent() {
        return Map.copyOf(descriptionsSent);
    }

    private final java.util.concurrent.atomic.AtomicInteger valueReads = new java.util.concurrent.atomic.AtomicInteger();

    /** Saved values read whole over the (fake) network so far. */
    int valueReads() {
        return valueReads.get();
    }

    @Override
    public CompletableFuture<SavedValue> readValue(InetSocketAddress daemon, StorePath path) {
        valueReads.incrementAndGet();
        return at(daemon, () -> {
            try (DataRef ref = d(daemon).store().open(path)) {
                ByteBuffer b = ByteBuffer.allocate((int) ref.size());
                ref.copyTo(0, ref.size(), b);
                CRC32C c = new CRC32C();
                c.update(b.array());
                String crc = String.format("%08x", (int) c.getValue());
                Entry e = d(daemon).store().stat(path).orElseThrow();
                return new SavedValue(b.array(), e.type() == EntryType.TENSOR ? e.meta() : null, crc);
            }
        });
    }

    @Override
    public CompletableFuture<Void> sealed(InetSocketAddress daemon, String job, long step, List<Integer> ranks, int world,
            JsonNode config) {
        return at(daemon, () -> {
            d(daemon).jobs().sealed(job, step, ranks, world, config);
            return null;
        });
    }

    @Override
    public CompletableFuture<Void> raiseStop(InetSocketAddress daemon, String job, OptionalLong atStep, String reason) {
        return at(daemon, () -> {
            d(daemon).jobs().stopFlags().raise(job, atStep, reason);
            return null;
        });
    }

    @Override
    public CompletableFuture<Void> removeJob(InetSocketAddress daemon, String job, RemovalStep step) {
        return at(daemon, () -> {
            JobRemoval r = new JobRemoval(d(daemon).store(), d(daemon).jobs(), this);
            switch (step) {
                case PREPARE -> r.prepare(job);
                case RELEASE -> r.release(job);
                case REMOVE -> r.removeHere(job);
                default -> throw new IllegalArgumentException(step.toString());
            }
            return null;
        });
    }

    @Override
    public CompletableFuture<Void> clearStop(InetSocketAddress daemon, String job) {
        return at(daemon, () -> {
            d(daemon).jobs().stopFlags().clear(job);
            return null;
        });
    }

    @Override
    public CompletableFuture<OptionalInt> readRegion(InetSocketAddress daemon, StorePath path, Region region,
            ByteBuffer dst, long pace) {
        boolean held = heldBelow.stream().anyMatch(h -> path.toString().startsWith(h + "/"));
        if (held && region.ranges().get(0).start() >= heldFrom) {
            return heldRelease.thenCompose(v -> read(daemon, path, region, dst));
        }
        return read(daemon, path, region, dst);
    }

    private CompletableFuture<OptionalInt> read(InetSocketAddress daemon, StorePath path, Region region, ByteBuffer dst) {
        StorePath failing = failingBelow;
        if (failing != null && path.toString().startsWith(failing + "/")) {
            return CompletableFuture.failedFuture(new IOException("reading " + path + " failed (injected)"));
        }
        return readStored(daemon, path, region, dst);
    }

    private CompletableFuture<OptionalInt> readStored(InetSocketAddress daemon, StorePath path, Region region,
            ByteBuffer dst) {
        return at(daemon, () -> {
            try (DataRef ref = d(daemon).store().openTensor(path)) {
                ByteBuffer view = dst.duplicate();
                RegionRead read = new RegionRead(ref, ref.meta(), region);
                if (read.byteSize() != dst.remaining()) {
                    throw new IOException(path + " [" + region + "] has " + read.byteSize() + " bytes, expected "
                            + dst.remaining());
                }
                read.copy(dst);
                CRC32C c = new CRC32C();
                c.update(view);
                served.accept(path);
                return OptionalInt.of((int) c.getValue());
            }
        });
    }

    private InetSocketAddress byName(String hostPort) {
        return DaemonClient.address(hostPort.replaceFirst("^[a-z]+://", ""));
    }

    @Override
    public CompletableFuture<JsonNode> parallelize(String daemon, String job, JsonNode request) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("resource changes are not simulated"));
    }

    @Override
    public CompletableFuture<JsonNode> startResourceChange(String daemon, String job, JsonNode request) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("resource changes are not simulated"));
    }

    @Override
    public CompletableFuture<JsonNode> awaitResourceChange(String daemon, String job, String id,
            java.time.Duration wait) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("resource changes are not simulated"));
    }

    @Override
    public CompletableFuture<java.util.Optional<byte[]>> readFile(String daemon, StorePath path) {
        InetSocketAddress a = byName(daemon);
        return at(a, () -> SmallFiles.read(d(a).store(), path).map(t -> t.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }

    @Override
    public CompletableFuture<Void> writeFile(String daemon, StorePath path, byte[] bytes) {
        InetSocketAddress a = byName(daemon);
        return at(a, () -> {
            SmallFiles.put(d(a).store(), path, bytes);
            return null;
        });
    }
}
