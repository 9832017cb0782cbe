package io.tenplex.store.data;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.StoreException;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.peer.DaemonLink;
import io.tenplex.store.memory.OutOfBudgetException;
import io.tenplex.store.rest.ControlHandler;
import java.io.IOException;
import java.io.StringReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The dataset mounts of this daemon and their routes under {@code /api/v1/datasets/<job>}:
 * {@code POST .../mount} (JSON: the index, the mount parameters, the ranks served here and the peers
 * to load from), {@code GET} (state and loading statistics), {@code DELETE} (unmount),
 * {@code GET .../files/<path>} (a view file, {@code offset}/{@code length} optional; waits for
 * samples still loading) and {@code POST .../samples} (daemon to daemon: the loaded bytes of the
 * given samples). A new mount of a job replaces the previous one, which keeps serving its samples to
 * the new mount and to peers until the new one has loaded.
 */
public final class DatasetService implements ControlHandler, AutoCloseable {
    public static final String PREFIX = "/api/v1/datasets/";
    private static final Pattern JOB = Pattern.compile("[A-Za-z0-9._-]+");
    private static final int CHUNK = 64;
    private static final int LOADERS = 4;

    private final Allocator allocator;
    private final ObjectMapper json = new ObjectMapper();
    private final Map<String, DatasetMount> mounts = new ConcurrentHashMap<>();
    private final Map<String, DatasetMount> previous = new ConcurrentHashMap<>();
    private final ExecutorService loaders = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "tenplex-data-load");
        t.setDaemon(true);
        return t;
    });
    private final SourceReader source = new SourceReader();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String token;
    private final DaemonLink link;
    private volatile List<String> defaultPeers = List.of();

    /** @param token bearer token sent to peers, or null */
    public DatasetService(Allocator allocator, String token) {
        this(DaemonLink.plain(token), allocator);
    }

    /** @param link how peers are reached (TLS or not) and their bearer token */
    public DatasetService(DaemonLink link, Allocator allocator) {
        this.allocator = allocator;
        this.link = link;
        this.token = link.token();
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
                    return CompletableFuture.completedFuture(json(200, mount(job, json.readTree(req.body()))));
                case "GET ":
                    return CompletableFuture.completedFuture(json(200, describe(current(job))));
                case "DELETE ":
                    unmount(job);
                    return CompletableFuture.completedFuture(Response.text(200, "unmounted " + job));
                case "POST samples":
                    return CompletableFuture.completedFuture(new Response(200, "application/octet-stream",
                            samples(job, req.body())));
                case "GET files":
                    return CompletableFuture.supplyAsync(() -> file(job, p.length > 2 ? p[2] : "", req), loaders);
                default:
                    throw StoreException.notFound("no dataset route " + req.method() + " " + req.path());
            }
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("bad mount request: " + e.getMessage()));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private DatasetMount current(String job) {
        DatasetMount m = mounts.get(job);
        if (m == null) {
            throw StoreException.notFound("no dataset mounted for job " + job);
        }
        return m;
    }

    /** Mounts (or remounts) a job's dataset; nothing changes if the request is bad or over budget. */
    public synchronized Map<String, Object> mount(String job, JsonNode b) throws IOException {
        DatasetIndex index = index(b);
        MountParams params;
        try {
            params = new MountParams(b.path("progress").asLong(0), need(b, "globalBatch"), need(b, "dpSize"),
                    b.path("seed").asLong(0), b.path("shuffle").asBoolean(true), b.path("samplesPerFile").asInt(1024));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bad mount parameters: " + e.getMessage());
        }
        List<Integer> ranks = new ArrayList<>();
        if (b.has("ranks")) {
            b.get("ranks").forEach(r -> ranks.add(r.asInt()));
            for (int r : ranks) {
                if (r < 0 || r >= params.dpSize()) {
                    throw new IllegalArgumentException("rank " + r + " outside the data-parallel size " + params.dpSize());
                }
            }
        } else {
            for (int r = 0; r < params.dpSize(); r++) {
                ranks.add(r);
            }
        }
        List<String> peers = new ArrayList<>();
        if (b.has("peers")) {
            b.get("peers").forEach(x -> peers.add(x.asText()));
        } else {
            peers.addAll(defaultPeers);
        }
        Map<String, Long> ends = new LinkedHashMap<>();
        for (DatasetIndex.File f : index.files()) {
            long end = 0;
            for (long e : f.ends()) {
                end = Math.max(end, e);
            }
            ends.merge(f.url(), end, Math::max);
        }
        ends.forEach(SourceReader::check);
        DatasetMount m;
        try {
            m = new DatasetMount(job, index, params, ranks, allocator);
        } catch (OutOfBudgetException e) {
            throw new StoreException(StoreException.Kind.INSUFFICIENT_STORAGE,
                    "dataset partition does not fit in the memory budget: " + e.getMessage());
        }
        DatasetMount old = mounts.put(job, m);
        DatasetMount older = old == null ? null : previous.put(job, old);
        if (older != null) {
            older.close();
        }
        loaders.execute(() -> load(m, old, peers));
        Map<String, Object> out = describe(m);
        out.put("head", "/job/" + job + "/head.txt");
        return out;
    }

    private static int need(JsonNode b, String field) {
        if (!b.path(field).canConvertToInt()) {
            throw new IllegalArgumentException("mount request needs an integer '" + field + "'");
        }
        return b.get(field).asInt();
    }

    private DatasetIndex index(JsonNode b) throws IOException {
        String text;
        if (b.hasNonNull("indexText")) {
            text = b.get("indexText").asText();
        } else if (b.hasNonNull("index")) {
            String where = b.get("index").asText();
            if (SourceReader.isHttp(where)) {
                try {
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(where)).build(),
                            HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() != 200) {
                        throw new IllegalArgumentException("GET " + where + ": status " + r.statusCode());
                    }
                    text = r.body();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted");
                }
            } else {
                try {
                    text = Files.readString(SourceReader.localPath(where));
                } catch (IOException e) {
                    throw new IllegalArgumentException("cannot read the index " + where + ": " + e);
                }
            }
        } else {
            throw new IllegalArgumentException("mount request needs 'index' (a path or URL) or 'indexText'");
        }
        try {
            return DatasetIndex.read(new StringReader(text));
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException("bad dataset index: " + e.getMessage());
        }
    }

    /** Loads every sample of {@code m} in read order: from the previous mount, a peer, or the source. */
    private void load(DatasetMount m, DatasetMount old, List<String> peers) {
        List<DatasetMount.Loc> order = m.loadOrder();
        int first = m.firstBatchSamples();
        AtomicInteger firstLeft = new AtomicInteger(first);
        if (first == 0) {
            m.firstBatchNanos = 0;
        }
        AtomicInteger cursor = new AtomicInteger();
        List<CompletableFuture<Void>> workers = new ArrayList<>();
        for (int w = 0; w < LOADERS; w++) {
            workers.add(CompletableFuture.runAsync(() -> {
                for (int at; (at = cursor.getAndAdd(CHUNK)) < order.size(); ) {
                    if (mounts.get(m.job) != m && previous.get(m.job) != m) {
                        return; // unmounted
                    }
                    List<DatasetMount.Loc> chunk = order.subList(at, Math.min(at + CHUNK, order.size()));
                    loadChunk(m, old, peers, chunk);
                    int inFirst = Math.max(0, Math.min(first, at + chunk.size()) - at);
                    if (inFirst > 0 && firstLeft.addAndGet(-inFirst) == 0) {
                        m.firstBatchNanos = System.nanoTime() - m.mountedNanos;
                    }
                }
            }, loaders));
        }
        CompletableFuture.allOf(workers.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
            if (e != null) {
                m.loadError = e.toString();
                return;
            }
            m.loadedNanos = System.nanoTime() - m.mountedNanos;
            if (old != null && previous.remove(m.job, old)) {
                old.close(); // the new mount no longer needs it
            }
        });
    }

    private void loadChunk(DatasetMount m, DatasetMount old, List<String> peers, List<DatasetMount.Loc> chunk) {
        List<DatasetMount.Loc> missing = new ArrayList<>();
        for (DatasetMount.Loc loc : chunk) {
            ByteBuffer tmp = ByteBuffer.allocate((int) loc.buf().length(loc.i()));
            if (old != null && old.copySample(loc.buf().ids[loc.i()], tmp)) {
                fill(m, loc, tmp.flip());
                m.fromLocal.incrementAndGet();
            } else {
                missing.add(loc);
            }
        }
        for (String peer : peers) {
            if (missing.isEmpty()) {
                break;
            }
            missing = fromPeer(m, peer, missing);
        }
        for (DatasetMount.Loc loc : missing) {
            int id = loc.buf().ids[loc.i()];
            int file = m.index.fileOf(id);
            ByteBuffer tmp = ByteBuffer.allocate((int) loc.buf().length(loc.i()));
            for (long backoff = 100; ; backoff = Math.min(backoff * 2, 5000)) {
                try {
                    source.read(m.index.files().get(file).url(), m.index.begin(id), tmp.clear());
                    m.loadError = "";
                    break;
                } catch (IOException | java.io.UncheckedIOException e) {
                    m.loadError = "reading sample " + id + " from " + m.index.files().get(file).url() + ": " + e.getMessage()
                            + " (retrying)";
                    if (mounts.get(m.job) != m) {
                        return;
                    }
                    try {
                        Thread.sleep(backoff); // waiting for the source to come back, not for another thread
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
            fill(m, loc, tmp.flip());
            m.fromSource.incrementAndGet();
        }
    }

    private static void fill(DatasetMount m, DatasetMount.Loc loc, ByteBuffer bytes) {
        m.loadedBytes.addAndGet(bytes.remaining());
        loc.buf().fill(loc.i(), bytes);
    }

    /** Asks one peer for the samples; returns those it did not have. */
    private List<DatasetMount.Loc> fromPeer(DatasetMount m, String peer, List<DatasetMount.Loc> wanted) {
        ByteBuffer ids = ByteBuffer.allocate(4 * wanted.size()).order(ByteOrder.LITTLE_ENDIAN);
        wanted.forEach(l -> ids.putInt(l.buf().ids[l.i()]));
        HttpRequest.Builder rb = HttpRequest.newBuilder(link.uri(peer, PREFIX + m.job + "/samples"))
                .timeout(Duration.ofMinutes(1)).POST(HttpRequest.BodyPublishers.ofByteArray(ids.array()));
        if (token != null) {
            rb.header("Authorization", "Bearer " + token);
        }
        byte[] body;
        try {
            HttpResponse<byte[]> r = link.http().send(rb.build(), HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200) {
                return wanted; // no mount of this job there
            }
            body = r.body();
        } catch (IOException e) {
            return wanted; // an unreachable peer only means loading from elsewhere
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return wanted;
        }
        ByteBuffer in = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        List<DatasetMount.Loc> rest = new ArrayList<>();
        for (DatasetMount.Loc loc : wanted) {
            long len = in.remaining() >= 8 ? in.getLong() : -1;
            if (len != loc.buf().length(loc.i()) || in.remaining() < len) {
                rest.add(loc);
                if (len > 0 && in.remaining() >= len) {
                    in.position(in.position() + (int) len);
                }
                continue;
            }
            fill(m, loc, in.slice(in.position(), (int) len));
            in.position(in.position() + (int) len);
            m.fromPeers.incrementAndGet();
        }
        return rest;
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
        loaders.shutdownNow();
        source.close();
    }
}
