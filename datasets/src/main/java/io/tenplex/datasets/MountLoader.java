package io.tenplex.datasets;

import io.tenplex.server.peer.DaemonLink;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Loads the samples of a new mount in read order, in chunks of {@value #CHUNK} on {@value #LOADERS}
 * workers: each sample from the previous mount on this daemon, else from the first peer that has it,
 * else from the source (retried with back-off while the mount is current). Runs on the loader
 * threads only; it blocks.
 */
final class MountLoader {
    static final int CHUNK = 64;
    static final int LOADERS = 4;

    private final Executor loaders;
    private final SourceReader source;
    private final DaemonLink link;
    private final Predicate<DatasetMount> live;
    private final Predicate<DatasetMount> current;
    private final Consumer<DatasetMount> retired;

    /**
     * @param link how peers are reached (scheme, trusted certificates, token)
     * @param live whether a mount is still worth loading (current or previous)
     * @param current whether a mount is the job's current one (the source is retried only for it)
     * @param retired called with the previous mount once the new one has loaded (null if there was none)
     */
    MountLoader(Executor loaders, SourceReader source, DaemonLink link, Predicate<DatasetMount> live,
            Predicate<DatasetMount> current, Consumer<DatasetMount> retired) {
        this.loaders = loaders;
        this.source = source;
        this.link = link;
        this.live = live;
        this.current = current;
        this.retired = retired;
    }

    /** Loads every sample of {@code m} in read order: from the previous mount, a peer, or the source. */
    void load(DatasetMount m, DatasetMount old, List<String> peers) {
        int count = m.loadCount();
        int first = m.firstBatchSamples();
        AtomicInteger firstLeft = new AtomicInteger(first);
        if (first == 0) {
            m.firstBatchNanos = 0;
        }
        AtomicInteger cursor = new AtomicInteger();
        List<CompletableFuture<Void>> workers = new ArrayList<>();
        for (int w = 0; w < LOADERS; w++) {
            workers.add(CompletableFuture.runAsync(() -> {
                for (int at; (at = cursor.getAndAdd(CHUNK)) < count; ) {
                    if (!live.test(m)) {
                        return; // unmounted
                    }
                    List<DatasetMount.Loc> chunk = new ArrayList<>(CHUNK);
                    for (int k = at; k < (int) Math.min((long) at + CHUNK, count); k++) {
                        chunk.add(m.loadAt(k));
                    }
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
                m.settled.complete(null);
                return;
            }
            m.loadedNanos = System.nanoTime() - m.mountedNanos;
            m.settled.complete(null);
            retired.accept(old); // the new mount no longer needs it
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
                    if (!current.test(m)) {
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
        HttpRequest.Builder rb = link.authorize(HttpRequest.newBuilder(link.uri(peer, DatasetService.PREFIX + m.job
                + "/samples"))).timeout(Duration.ofMinutes(1)).POST(HttpRequest.BodyPublishers.ofByteArray(ids.array()));
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
}
