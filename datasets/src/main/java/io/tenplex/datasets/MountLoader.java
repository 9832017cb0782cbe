package io.tenplex.datasets;

import io.tenplex.ptc.data.DatasetIndex;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
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
    private final ShardPeers peers;
    private final Predicate<DatasetMount> live;
    private final Predicate<DatasetMount> current;
    private final Consumer<DatasetMount> retired;

    /**
     * @param peers how other daemons are asked for samples they hold
     * @param live whether a mount is still worth loading (current or previous)
     * @param current whether a mount is the job's current one (the source is retried only for it)
     * @param retired called with the previous mount once the new one has loaded (null if there was none)
     */
    MountLoader(Executor loaders, SourceReader source, ShardPeers peers, Predicate<DatasetMount> live,
            Predicate<DatasetMount> current, Consumer<DatasetMount> retired) {
        this.loaders = loaders;
        this.source = source;
        this.peers = peers;
        this.live = live;
        this.current = current;
        this.retired = retired;
    }

    /** Loads every sample of {@code m} in read order: from the previous mount, a peer, or the source. */
    void load(DatasetMount m, DatasetMount old, List<String> from) {
        int first = m.firstBatchSamples();
        AtomicInteger firstLeft = new AtomicInteger(first);
        if (first == 0) {
            m.firstBatchNanos = 0;
        }
        AtomicInteger cursor = new AtomicInteger();
        // a previous mount of another index numbers other samples: copy nothing from it
        DatasetMount same = old != null && sameIndex(old.index, m.index) ? old : null;
        List<CompletableFuture<Void>> workers = new ArrayList<>();
        for (int w = 0; w < LOADERS; w++) {
            workers.add(CompletableFuture.runAsync(() -> work(m, same, from, cursor, firstLeft), loaders));
        }
        CompletableFuture.allOf(workers.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
            if (e != null) {
                m.loadError = e.toString();
                DatasetMetrics.settled(m);
                m.settled.complete(null);
                return;
            }
            m.loadedNanos = System.nanoTime() - m.mountedNanos;
            DatasetMetrics.settled(m);
            m.settled.complete(null);
            retired.accept(old); // the new mount no longer needs it
        });
    }

    /** True if both indexes name the same sources and byte ranges, so that sample ids mean the same. */
    static boolean sameIndex(DatasetIndex a, DatasetIndex b) {
        if (a == b) {
            return true;
        }
        if (a.files().size() != b.files().size()) {
            return false;
        }
        for (int f = 0; f < a.files().size(); f++) {
            DatasetIndex.File x = a.files().get(f);
            DatasetIndex.File y = b.files().get(f);
            if (!x.url().equals(y.url()) || !java.util.Arrays.equals(x.begins(), y.begins())
                    || !java.util.Arrays.equals(x.ends(), y.ends())) {
                return false;
            }
        }
        return true;
    }

    /** One worker: takes the next chunk in read order until none is left or the mount is gone. */
    private void work(DatasetMount m, DatasetMount old, List<String> from, AtomicInteger cursor,
            AtomicInteger firstLeft) {
        int count = m.loadCount();
        int first = m.firstBatchSamples();
        for (int at; (at = cursor.getAndAdd(CHUNK)) < count; ) {
            if (!live.test(m)) {
                return; // unmounted
            }
            List<SampleLoc> chunk = new ArrayList<>(CHUNK);
            for (int k = at; k < (int) Math.min((long) at + CHUNK, count); k++) {
                chunk.add(m.loadAt(k));
            }
            loadChunk(m, old, from, chunk);
            int inFirst = Math.max(0, Math.min(first, at + chunk.size()) - at);
            if (inFirst > 0 && firstLeft.addAndGet(-inFirst) == 0) {
                m.firstBatchNanos = System.nanoTime() - m.mountedNanos;
            }
        }
    }

    private void loadChunk(DatasetMount m, DatasetMount old, List<String> from, List<SampleLoc> chunk) {
        List<SampleLoc> missing = new ArrayList<>();
        for (SampleLoc loc : chunk) {
            ByteBuffer tmp = ByteBuffer.allocate((int) loc.length());
            if (old != null && old.copySample(loc.id(), tmp)) {
                fill(m, loc, tmp.flip());
                m.fromLocal.incrementAndGet(); DatasetMetrics.SAMPLES.labels("previous_mount").inc();
            } else {
                missing.add(loc);
            }
        }
        for (String peer : from) {
            if (missing.isEmpty()) {
                break;
            }
            missing = fromPeer(m, peer, missing);
        }
        for (SampleLoc loc : missing) {
            if (!fromSource(m, loc)) {
                return; // no longer current, or interrupted
            }
        }
    }

    /** Reads one sample from its source, retrying with back-off while the mount is current. */
    private boolean fromSource(DatasetMount m, SampleLoc loc) {
        int id = loc.id();
        String url = m.index.files().get(m.index.fileOf(id)).url();
        ByteBuffer tmp = ByteBuffer.allocate((int) loc.length());
        for (long backoff = 100; ; backoff = Math.min(backoff * 2, 5000)) {
            try {
                source.read(url, m.index.begin(id), tmp.clear());
                m.loadError = "";
                break;
            } catch (IOException | UncheckedIOException e) {
                m.loadError = "reading sample " + id + " from " + url + ": " + e.getMessage() + " (retrying)";
                if (!current.test(m) || !pause(backoff)) {
                    return false;
                }
            }
        }
        fill(m, loc, tmp.flip());
        m.fromSource.incrementAndGet(); DatasetMetrics.SAMPLES.labels("source").inc();
        return true;
    }

    /** Waits for the source to come back (not for another thread); false if interrupted. */
    private static boolean pause(long millis) {
        try {
            Thread.sleep(millis);
            return true;
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static void fill(DatasetMount m, SampleLoc loc, ByteBuffer bytes) {
        m.loadedBytes.addAndGet(bytes.remaining());
        loc.buf().fill(loc.i(), bytes);
    }

    /** Asks one peer for the samples; returns those it did not have. */
    private List<SampleLoc> fromPeer(DatasetMount m, String peer, List<SampleLoc> wanted) {
        int[] ids = new int[wanted.size()];
        for (int k = 0; k < ids.length; k++) {
            ids[k] = wanted.get(k).id();
        }
        List<ByteBuffer> got = peers.fetch(peer, m.job, ids);
        if (got == null) {
            return wanted; // an unreachable peer only means loading from elsewhere
        }
        List<SampleLoc> rest = new ArrayList<>();
        for (int k = 0; k < wanted.size(); k++) {
            SampleLoc loc = wanted.get(k);
            ByteBuffer bytes = k < got.size() ? got.get(k) : null;
            if (bytes == null || bytes.remaining() != loc.length()) {
                rest.add(loc);
                continue;
            }
            fill(m, loc, bytes);
            m.fromPeers.incrementAndGet(); DatasetMetrics.SAMPLES.labels("peer").inc();
        }
        return rest;
    }
}
