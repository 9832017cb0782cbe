package io.tenplex.datasets;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.store.StoreException;
import io.tenplex.store.memory.Allocator;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.memory.OutOfBudgetException;
import io.tenplex.server.ControlHandler;
import java.io.IOException;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * The dataset mounts of this daemon and their routes under {@code /api/v1/datasets/<job>}:
 * {@code POST .../mount} (JSON: the index, the mount parameters, the ranks served here and the peers
 * to load from), {@code GET} (state and loading statistics), {@code DELETE} (unmount),
 * {@code GET .../files/<path>} (a view file, {@code offset}/{@code length} optional; waits for
 * samples still loading) and {@code POST .../samples} (daemon to daemon: the loaded bytes of the
 * given samples). A new mount of a job replaces the previous one, which keeps serving its samples to
 * the new mount and to peers until the new one has loaded. Sources are read only as the
 * {@link SourcePolicy} allows; mount requests (fetching, parsing, allocating) run on their own
 * bounded pool and loading on the loader threads, never on the caller's (event loop) thread.
 */
public final class DatasetService implements ControlHandler, AutoCloseable {
    public static final String PREFIX = "/api/v1/datasets/";
    private static final Pattern JOB = Pattern.compile("[A-Za-z0-9._-]+");

    /** Threads that fetch and parse indexes and allocate mounts (never on an event loop). */
    static final int REQUEST_THREADS = 4;
    /** Mount requests waiting for a request thread; more are refused with 503. */
    static final int REQUEST_QUEUE = 64;
    /** The longest {@code wait} of a status request. */
    static final long MAX_WAIT_MILLIS = 60_000;

    private final Allocator allocator;
    private final MountHeap heap;
    private final ObjectMapper json = new ObjectMapper();
    private final Map<String, DatasetMount> mounts = new ConcurrentHashMap<>();
    private final Map<String, DatasetMount> previous = new ConcurrentHashMap<>();
    private final ExecutorService loaders = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "tenplex-data-load");
        t.setDaemon(true);
        return t;
    });
    private final ThreadPoolExecutor requests = new ThreadPoolExecutor(REQUEST_THREADS, REQUEST_THREADS, 30,
            TimeUnit.SECONDS, new ArrayBlockingQueue<>(REQUEST_QUEUE), r -> {
                Thread t = new Thread(r, "tenplex-data-request");
                t.setDaemon(true);
                return t;
            });
    private final SourceReader source;
    private final MountLoader loader;
    private volatile List<String> defaultPeers = List.of();

    /**
     * @param link how peers are reached (TLS or not) and their bearer token
     * @param policy where index and sample sources may come from, and the fetch timeouts
     */
    public DatasetService(DaemonLink link, Allocator allocator, SourcePolicy policy) {
        this(link, allocator, policy, MountHeap.ofMaxHeap().limit());
    }

    /**
     * @param heapBudget the daemon heap all mounts together may hold (their indexes, partitions and
     *     sample tables); by default a quarter of the maximum heap
     */
    public DatasetService(DaemonLink link, Allocator allocator, SourcePolicy policy, long heapBudget) {
        this.heap = new MountHeap(heapBudget);
        this.allocator = allocator;
        this.source = new SourceReader(policy);
        this.loader = new MountLoader(loaders, source, link, this::isLive, this::isCurrent, this::retire);
        requests.allowCoreThreadTimeOut(true);
    }

    /** Peers ({@code host:port}) asked for samples when a mount request names none. */
    public void setDefaultPeers(List<String> peers) {
        this.defaultPeers = List.copyOf(peers);
    }

    /** The view entry at a store path such as {@code /job/J/head.txt}, if a mount shows one there. */
    public Optional<ViewNode> lookup(String path) {
        if (!path.startsWith("/job/")) {
            return Optional.empty();
        }
        String rest = path.substring(5);
        int slash = rest.indexOf('/');
        String job = slash < 0 ? rest : rest.substring(0, slash);
        DatasetMount m = mounts.get(job);
        if (m == null) {
            return Optional.empty();
        }
        return Optional.ofNullable(m.nodes.get(slash < 0 ? "" : rest.substring(slash + 1)));
    }

    /** Jobs with a mounted dataset (their {@code /job/<job>} directories exist in the view). */
    public List<String> jobs() {
        return new ArrayList<>(mounts.keySet());
    }

    /** True for paths inside a mounted view (read-only). */
    public boolean isViewPath(String path) {
        return lookup(path).isPresent() && !path.matches("/job/[^/]+");
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        try {
            String[] p = req.path().substring(PREFIX.length()).split("/", 3);
            String job = p[0];
            if (!JOB.matcher(job).matches()) {
                throw new IllegalArgumentException("bad job name '" + job + "'");
            }
            String what = p.length > 1 ? p[1] : "";
            switch (req.method() + " " + what) {
                case "POST mount":
                    return onRequestThread(() -> json(200, mount(job, readJson(req.body()))));
                case "GET ":
                    return status(job, req);
                case "DELETE ":
                    unmount(job);
                    return CompletableFuture.completedFuture(Response.text(200, "unmounted " + job));
                case "POST samples":
                    return CompletableFuture.supplyAsync(() -> new Response(200, "application/octet-stream",
                            samples(job, req.body())), loaders);
                case "GET files":
                    return CompletableFuture.supplyAsync(() -> file(job, p.length > 2 ? p[2] : "", req), loaders);
                default:
                    throw StoreException.notFound("no dataset route " + req.method() + " " + req.path());
            }
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Runs blocking work (fetches, parsing, allocation) on a request thread; 503 when too many wait. */
    private CompletableFuture<Response> onRequestThread(java.util.function.Supplier<Response> work) {
        try {
            return CompletableFuture.supplyAsync(work, requests);
        } catch (RejectedExecutionException e) {
            throw new StoreException(StoreException.Kind.UNAVAILABLE, "too many dataset mount requests in progress ("
                    + (REQUEST_THREADS + REQUEST_QUEUE) + "); try again later");
        }
    }

    private JsonNode readJson(byte[] body) {
        try {
            return json.readTree(body);
        } catch (IOException e) {
            throw new IllegalArgumentException("bad mount request: the body is not JSON");
        }
    }

    /** The mount's status; with {@code wait=<ms>} (at most a minute) once loading has ended or the time is up. */
    private CompletableFuture<Response> status(String job, Request req) {
        DatasetMount m = current(job);
        long wait = longParam(req, "wait", 0);
        if (wait < 0 || wait > MAX_WAIT_MILLIS) {
            throw new IllegalArgumentException("wait " + wait + " ms (expected: 0 <= wait <= " + MAX_WAIT_MILLIS + ")");
        }
        if (wait == 0) {
            return CompletableFuture.completedFuture(json(200, describe(m)));
        }
        return m.settled.copy().completeOnTimeout(null, wait, TimeUnit.MILLISECONDS).thenApply(v -> json(200, describe(m)));
    }

    /**
     * Waits until the job's current mount has finished loading (or failed, or was unmounted).
     *
     * @return false if the time ran out first
     */
    public boolean awaitLoaded(String job, Duration timeout) throws InterruptedException {
        try {
            current(job).settled.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (java.util.concurrent.TimeoutException e) {
            return false;
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    /** True while {@code m} is the job's mount or the previous one (still worth loading). */
    private boolean isLive(DatasetMount m) {
        return mounts.get(m.job) == m || previous.get(m.job) == m;
    }

    private boolean isCurrent(DatasetMount m) {
        return mounts.get(m.job) == m;
    }

    /** The loader is done with {@code old}: free it unless a newer remount already did. */
    private void retire(DatasetMount old) {
        if (old != null && previous.remove(old.job, old)) {
            old.close();
        }
    }

    private DatasetMount current(String job) {
        DatasetMount m = mounts.get(job);
        if (m == null) {
            throw StoreException.notFound("no dataset mounted for job " + job);
        }
        return m;
    }

    /** Heap bytes reserved by the mounts now (0 with none). */
    public long heapReserved() {
        return heap.used();
    }

    /** The heap budget of all mounts together. */
    public long heapBudget() {
        return heap.limit();
    }

    /**
     * Mounts (or remounts) a job's dataset; nothing changes if the request is bad, refused or over
     * budget (the off-heap memory budget for the samples, the heap budget for the tables that
     * describe them). Blocking (it may fetch the index): never call it on an event loop.
     */
    public Map<String, Object> mount(String job, JsonNode b) {
        MountRequest r = MountRequest.parse(b, defaultPeers, source.policy());
        String where = b.hasNonNull("indexText") ? null : indexLocation(b);
        MountHeap.Reservation reserved = heap.reserve(0, "the index of dataset mount " + job);
        DatasetMount m;
        try {
            String text = where == null ? b.get("indexText").asText() : source.readIndex(where, reserved::resize);
            reserved.resize(MountHeap.parsing(text.length(), lines(text)));
            DatasetIndex index = parse(text, where);
            text = null; // the parsed index replaces it
            checkSources(index);
            DataPartition partition = partition(index, r);
            reserved.resize(MountHeap.mount(index, partition, r.ranks()));
            m = allocate(job, index, partition, r, reserved);
        } catch (RuntimeException e) {
            reserved.close();
            throw e;
        }
        install(job, m, r.peers());
        Map<String, Object> out = describe(m);
        out.put("head", "/job/" + job + "/head.txt");
        return out;
    }

    private static long lines(String text) {
        long n = 1;
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) == '\n') {
                n++;
            }
        }
        return n;
    }

    /** Every source of the index must be allowed, and local files long enough. */
    private void checkSources(DatasetIndex index) {
        Map<String, Long> ends = new LinkedHashMap<>();
        for (DatasetIndex.File f : index.files()) {
            long end = 0;
            for (long e : f.ends()) {
                end = Math.max(end, e);
            }
            ends.merge(f.url(), end, Math::max);
        }
        ends.forEach(source::check);
    }

    private static DataPartition partition(DatasetIndex index, MountRequest r) {
        try {
            return new DataPartition(index.size(), r.params());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("progress " + r.params().progress() + " is beyond the last epoch this "
                    + "index can count (" + Integer.MAX_VALUE + " epochs)");
        }
    }

    /** The mount, which takes over {@code reserved}. */
    private DatasetMount allocate(String job, DatasetIndex index, DataPartition partition, MountRequest r,
            MountHeap.Reservation reserved) {
        try {
            return new DatasetMount(job, index, partition, r.ranks(), allocator, reserved);
        } catch (OutOfBudgetException e) {
            throw new StoreException(StoreException.Kind.INSUFFICIENT_STORAGE,
                    "dataset partition does not fit in the memory budget: " + e.getMessage());
        }
    }

    private synchronized void install(String job, DatasetMount m, List<String> peers) {
        DatasetMount old = mounts.put(job, m);
        DatasetMount older = old == null ? null : previous.put(job, old);
        if (older != null) {
            older.close();
        }
        loaders.execute(() -> loader.load(m, old, peers));
    }

    private static String indexLocation(JsonNode b) {
        if (!b.hasNonNull("index")) {
            throw new IllegalArgumentException("mount request needs 'index' (a path or URL) or 'indexText'");
        }
        return b.get("index").asText();
    }

    /** Parses an inline index ({@code where} null: errors show the text) or one read from {@code where}. */
    private static DatasetIndex parse(String text, String where) {
        if (where == null) {
            try {
                return DatasetIndex.read(new StringReader(text));
            } catch (IOException | IllegalArgumentException e) {
                throw new IllegalArgumentException("bad dataset index: " + e.getMessage());
            }
        }
        try {
            return DatasetIndex.read(new StringReader(text));
        } catch (DatasetIndex.FormatException e) {
            // the text came from a file or URL: say where it is wrong, never what it holds
            throw new IllegalArgumentException("dataset index " + where + " is not a valid index (line " + e.line() + ")");
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException("dataset index " + where + " is not a valid index");
        }
    }

    /** Answers a peer: per requested id (int32 little-endian), an int64 length (-1: not here) and the bytes. */
    private byte[] samples(String job, byte[] body) {
        if (body.length % 4 != 0) {
            throw new IllegalArgumentException("sample ids must be int32 little-endian (" + body.length + " bytes)");
        }
        DatasetMount cur = mounts.get(job);
        DatasetMount prev = previous.get(job);
        ByteBuffer ids = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        while (ids.hasRemaining()) {
            int id = ids.getInt();
            ByteBuffer bytes = null;
            for (DatasetMount m : new DatasetMount[] {cur, prev}) {
                if (m != null && bytes == null && id >= 0 && id < m.index.size()) {
                    ByteBuffer tmp = ByteBuffer.allocate((int) m.index.length(id));
                    if (m.copySample(id, tmp)) {
                        bytes = tmp.flip();
                    }
                }
            }
            out.write(len.clear().putLong(bytes == null ? -1 : bytes.remaining()).array(), 0, 8);
            if (bytes != null) {
                out.write(bytes.array(), 0, bytes.remaining());
            }
        }
        return out.toByteArray();
    }

    private Response file(String job, String path, Request req) {
        DatasetMount m = current(job);
        ViewNode node = m.nodes.get(path);
        if (node == null) {
            throw StoreException.notFound("no dataset view entry /job/" + job + "/" + path);
        }
        if (node.isDir()) {
            return Response.text(200, String.join("\n", node.children()));
        }
        long offset = longParam(req, "offset", 0);
        long length = longParam(req, "length", node.size() - Math.min(offset, node.size()));
        if (offset < 0 || length < 0 || length > (64 << 20)) {
            throw new IllegalArgumentException("offset " + offset + " and length " + length
                    + " (expected: offset >= 0, 0 <= length <= 64 MiB)");
        }
        ByteBuffer dst = ByteBuffer.allocate((int) Math.min(length, Math.max(0, node.size() - offset)));
        try {
            node.read(offset, dst); // fills dst across shard boundaries, waiting for samples still loading
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
        return new Response(200, "application/octet-stream", java.util.Arrays.copyOf(dst.array(), dst.position()));
    }

    private static long longParam(Request req, String name, long dflt) {
        String v = req.param(name);
        try {
            return v == null ? dflt : Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " '" + v + "' is not a number");
        }
    }

    private Map<String, Object> describe(DatasetMount m) {
        Map<String, Object> out = m.describeMount();
        Map<String, Object> load = new LinkedHashMap<>();
        long loaded = m.fromLocal.get() + m.fromPeers.get() + m.fromSource.get();
        load.put("state", m.loadedNanos >= 0 ? "loaded" : "loading");
        load.put("samplesLoaded", loaded);
        load.put("samplesTotal", m.totalSamples);
        load.put("bytesLoaded", m.loadedBytes.get());
        load.put("bytesTotal", m.totalBytes);
        load.put("fromPreviousMount", m.fromLocal.get());
        load.put("fromPeers", m.fromPeers.get());
        load.put("fromSource", m.fromSource.get());
        load.put("firstBatchReadyMillis", m.firstBatchNanos < 0 ? null : m.firstBatchNanos / 1e6);
        load.put("loadedMillis", m.loadedNanos < 0 ? null : m.loadedNanos / 1e6);
        load.put("readsThatWaited", m.waitedReads.get());
        load.put("readWaitMillis", m.waitNanos.get() / 1e6);
        load.put("longestReadWaitMillis", m.longestWaitNanos.get() / 1e6);
        if (!m.loadError.isEmpty()) {
            load.put("error", m.loadError);
        }
        out.put("load", load);
        return out;
    }

    /** Removes a job's mount; readers waiting on it get an error. */
    public synchronized void unmount(String job) {
        DatasetMount m = mounts.remove(job);
        if (m == null) {
            throw StoreException.notFound("no dataset mounted for job " + job);
        }
        m.close();
        DatasetMount p = previous.remove(job);
        if (p != null) {
            p.close();
        }
    }

    private Response json(int status, Object o) {
        try {
            return new Response(status, "application/json", json.writeValueAsBytes(o));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        for (String job : List.copyOf(mounts.keySet())) {
            unmount(job);
        }
        requests.shutdownNow();
        loaders.shutdownNow();
        source.close();
    }
}
