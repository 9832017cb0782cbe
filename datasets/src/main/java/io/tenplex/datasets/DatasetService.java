package io.tenplex.datasets;

import io.tenplex.store.JobNamespace;
import io.tenplex.store.StoreException;
import io.tenplex.store.memory.Allocator;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The dataset mounts of this daemon: mount (or remount) a job's dataset, show its state and
 * loading, read its view, serve its loaded samples to peers, unmount. A new mount of a job replaces
 * the previous one, which keeps serving its samples to the new mount and to peers until the new one
 * has loaded. Sources are read only as the {@link SourcePolicy} allows; mount requests (fetching,
 * parsing, allocating) run on the request threads and loading on the loader threads of the
 * {@link DatasetExecutors}, never on the caller's thread when called through the {@code ...Async}
 * methods. Thread-safe.
 */
public final class DatasetService implements AutoCloseable {
    /** The longest wait of a status request. */
    public static final long MAX_WAIT_MILLIS = 60_000;

    private final MountHeap heap;
    private final Mounts mounts = new Mounts();
    private final DatasetExecutors threads;
    private final SourceReader source;
    private final MountFactory factory;
    private final MountLoader loader;
    private volatile List<String> defaultPeers = List.of();

    /**
     * @param policy where index and sample sources may come from, and the fetch timeouts
     * @param peers how other daemons are asked for samples
     * @param threads the loader and request threads (transferred: {@link #close()} shuts them down)
     */
    public DatasetService(Allocator allocator, SourcePolicy policy, ShardPeers peers, DatasetExecutors threads) {
        this(allocator, policy, peers, threads, MountHeap.ofMaxHeap().limit());
    }

    /**
     * @param heapBudget the daemon heap all mounts together may hold (their indexes, partitions and
     *     sample tables); by default a quarter of the maximum heap
     */
    public DatasetService(Allocator allocator, SourcePolicy policy, ShardPeers peers, DatasetExecutors threads,
            long heapBudget) {
        this(allocator, new SourceReader(policy), peers, threads, heapBudget);
    }

    /** @param source how sources are read (transferred: {@link #close()} closes it) */
    DatasetService(Allocator allocator, SourceReader source, ShardPeers peers, DatasetExecutors threads,
            long heapBudget) {
        DatasetMetrics.atStart();
        this.heap = new MountHeap(heapBudget);
        this.threads = threads;
        this.source = source;
        this.factory = new MountFactory(allocator, heap, source);
        this.loader = new MountLoader(threads.loaders(), source, peers, mounts::isLive, mounts::isCurrent,
                mounts::retire);
    }

    /** Peers ({@code host:port}) asked for samples when a mount request names none. */
    public void setDefaultPeers(List<String> peers) {
        this.defaultPeers = List.copyOf(peers);
    }

    /** The view entry at a store path such as {@code /job/J/head.txt}, if a mount shows one there. */
    public Optional<ViewNode> lookup(String path) {
        Optional<JobNamespace.Located> at = JobNamespace.locate(path);
        DatasetMount m = at.isEmpty() ? null : mounts.get(at.get().job());
        if (m == null) {
            return Optional.empty();
        }
        return Optional.ofNullable(m.nodes.get(at.get().relative()));
    }

    /** Jobs with a mounted dataset (their {@code /job/<job>} directories exist in the view). */
    public List<String> jobs() {
        return mounts.jobs();
    }

    /** True for paths inside a mounted view (read-only). */
    public boolean isViewPath(String path) {
        return lookup(path).isPresent() && !JobNamespace.locate(path).map(l -> l.relative().isEmpty()).orElse(true);
    }

    /**
     * Mounts (or remounts) a job's dataset; nothing changes if the request is bad, refused or over
     * budget (the off-heap memory budget for the samples, the heap budget for the tables that
     * describe them). Blocking (it may fetch the index): never call it on an event loop.
     */
    public MountStatus mount(String job, MountRequest r) {
        List<String> peers = MountPeers.resolve(r.peers(), defaultPeers, source.policy());
        DatasetMount m = factory.build(job, r);
        DatasetMount old = mounts.install(m);
        DatasetMetrics.mounted(m, peers.size());
        threads.loaders().execute(() -> loader.load(m, old, peers));
        return status(m);
    }

    /** {@link #mount} on a request thread; {@code UNAVAILABLE} (503) when too many wait. */
    public CompletableFuture<MountStatus> mountAsync(String job, MountRequest r) {
        return mountAsync(job, () -> r);
    }

    /**
     * {@link #mount} on a request thread, the request made there too (parsing a large request
     * is work that must not run on an event loop either); {@code UNAVAILABLE} (503) when too many wait.
     */
    public CompletableFuture<MountStatus> mountAsync(String job, Supplier<MountRequest> request) {
        return onRequestThread(() -> mount(job, request.get()));
    }

    private <T> CompletableFuture<T> onRequestThread(Supplier<T> work) {
        try {
            return CompletableFuture.supplyAsync(work, threads.requests());
        } catch (RejectedExecutionException e) {
            throw new StoreException(StoreException.Kind.UNAVAILABLE, "too many dataset mount requests in progress ("
                    + threads.requestCapacity() + "); try again later");
        }
    }

    /** The job's mount and its loading now; {@code NOT_FOUND} without one. */
    public MountStatus status(String job) {
        return status(mounts.require(job));
    }

    private static MountStatus status(DatasetMount m) {
        return new MountStatus(m.info(), m.load());
    }

    /**
     * The status once loading has ended (loaded, failed or unmounted) or after {@code waitMillis}
     * (at most {@value #MAX_WAIT_MILLIS}), whichever comes first; it never blocks the caller.
     */
    public CompletableFuture<MountStatus> statusAsync(String job, long waitMillis) {
        DatasetMount m = mounts.require(job);
        if (waitMillis < 0 || waitMillis > MAX_WAIT_MILLIS) {
            throw new IllegalArgumentException("wait " + waitMillis + " ms (expected: 0 <= wait <= " + MAX_WAIT_MILLIS
                    + ")");
        }
        if (waitMillis == 0) {
            return CompletableFuture.completedFuture(status(m));
        }
        return m.settled.copy().completeOnTimeout(null, waitMillis, TimeUnit.MILLISECONDS).thenApply(v -> status(m));
    }

    /**
     * Waits until the job's current mount has finished loading (or failed, or was unmounted).
     *
     * @return false if the time ran out first
     */
    public boolean awaitLoaded(String job, Duration timeout) throws InterruptedException {
        try {
            mounts.require(job).settled.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    /** The entry {@code path} (relative to {@code /job/<job>/}) of the job's view; {@code NOT_FOUND} if none. */
    public ViewNode view(String job, String path) {
        ViewNode node = mounts.require(job).nodes.get(path);
        if (node == null) {
            throw StoreException.notFound("no dataset view entry " + JobNamespace.path(job, path));
        }
        return node;
    }

    /**
     * Up to {@code length} bytes of a view file at {@code offset}, read on a loader thread: the read
     * waits for samples still loading.
     */
    public CompletableFuture<byte[]> readAsync(ViewNode file, long offset, int length) {
        return CompletableFuture.supplyAsync(() -> read(file, offset, length), threads.loaders());
    }

    private static byte[] read(ViewNode file, long offset, int length) {
        ByteBuffer dst = ByteBuffer.allocate((int) Math.min(length, Math.max(0, file.size() - offset)));
        try {
            file.read(offset, dst); // fills dst across shard boundaries, waiting for samples still loading
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
        return Arrays.copyOf(dst.array(), dst.position());
    }

    /**
     * The loaded bytes of samples {@code ids} of the job's current or previous mount (for peers),
     * on a loader thread: per id its bytes, or null where neither mount holds it loaded.
     */
    public CompletableFuture<List<ByteBuffer>> loadedSamplesAsync(String job, int[] ids) {
        return CompletableFuture.supplyAsync(() -> loadedSamples(job, ids), threads.loaders());
    }

    private List<ByteBuffer> loadedSamples(String job, int[] ids) {
        DatasetMount cur = mounts.get(job);
        DatasetMount prev = mounts.previous(job);
        List<ByteBuffer> out = new ArrayList<>(ids.length);
        for (int id : ids) {
            ByteBuffer bytes = cur == null ? null : cur.loadedSample(id);
            out.add(bytes == null && prev != null ? prev.loadedSample(id) : bytes);
        }
        return out;
    }

    /** Heap bytes reserved by the mounts now (0 with none). */
    public long heapReserved() {
        return heap.used();
    }

    /** The heap budget of all mounts together. */
    public long heapBudget() {
        return heap.limit();
    }

    /** Removes a job's mount; readers waiting on it get an error. {@code NOT_FOUND} without one. */
    public void unmount(String job) {
        mounts.unmount(job);
        DatasetMetrics.unmounted(job);
    }

    @Override
    public void close() {
        for (String job : mounts.jobs()) {
            unmount(job);
        }
        threads.shutdownNow();
        source.close();
    }
}
