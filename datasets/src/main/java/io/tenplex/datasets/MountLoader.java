package io.tenplex.datasets;

import io.tenplex.datasets.hdf5.ArrayBlock;
import io.tenplex.datasets.hdf5.UndecodableException;
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
 * else from the source (retried with back-off while the mount is current, unless the source says the
 * sample cannot be decoded: then the sample is given up, its readers get the error and the load ends
 * {@code failed}). A source that decodes
 * samples in blocks (an HDF5 chunk of rows) gives all the block's samples this mount reads when one
 * of them is read, so that each block is decoded about once however the read order jumps. Every
 * sample is claimed by the one worker that fills it. Runs on the loader threads only; it blocks.
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

    /** One mount's loading: what its workers share. */
    private record Load(DatasetMount m, DatasetMount old, List<String> from, AtomicInteger cursor,
            AtomicInteger firstLeft) {}

    /** Loads every sample of {@code m} in read order: from the previous mount, a peer, or the source. */
    void load(DatasetMount m, DatasetMount old, List<String> from) {
        int first = m.firstBatchSamples();
        if (first == 0) {
            m.firstBatchNanos = 0;
        }
        // a previous mount of another index numbers other samples: copy nothing from it
        DatasetMount same = old != null && sameIndex(old.index, m.index) ? old : null;
        Load l = new Load(m, same, from, new AtomicInteger(), new AtomicInteger(first));
        List<CompletableFuture<Void>> workers = new ArrayList<>();
        for (int w = 0; w < LOADERS; w++) {
            workers.add(CompletableFuture.runAsync(() -> work(l), loaders));
        }
        CompletableFuture.allOf(workers.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
            if (e != null) {
                m.loadError = e.toString();
                DatasetMetrics.settled(m);
                m.settled.complete(null);
                return;
            }
            m.loaded(System.nanoTime() - m.mountedNanos);
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
    private void work(Load l) {
        DatasetMount m = l.m();
        int count = m.loadCount();
        for (int at; (at = l.cursor().getAndAdd(CHUNK)) < count; ) {
            if (!live.test(m)) {
                return; // unmounted
            }
            List<SampleLoc> chunk = new ArrayList<>(CHUNK);
            for (int k = at; k < (int) Math.min((long) at + CHUNK, count); k++) {
                chunk.add(m.loadAt(k));
            }
            loadChunk(l, chunk);
        }
    }

    /**
     * Loads a chunk's samples; each is claimed just before it is filled, so that one another worker
     * filled with a decoded block of its source meanwhile is skipped.
     */
    private void loadChunk(Load l, List<SampleLoc> chunk) {
        List<SampleLoc> missing = new ArrayList<>();
        for (SampleLoc loc : chunk) {
            ByteBuffer tmp = ByteBuffer.allocate((int) loc.length());
            if (l.old() != null && l.old().copySample(loc.id(), tmp)) {
                if (loc.buf().claim(loc.i())) {
                    fill(l, loc, tmp.flip());
                    l.m().fromLocal.incrementAndGet(); DatasetMetrics.SAMPLES.labels("previous_mount").inc();
                }
            } else {
                missing.add(loc);
            }
        }
        for (String peer : l.from()) {
            if (missing.isEmpty()) {
                break;
            }
            missing = fromPeer(l, peer, missing);
        }
        for (SampleLoc loc : missing) {
            if (loc.buf().claim(loc.i()) && !fromSource(l, loc)) {
                return; // no longer current, or interrupted
            }
        }
    }

    /**
     * Reads one sample from its source, retrying with back-off while the mount is current; where
     * the source decodes it in a block with others (an array's chunk), fills those of the block's
     * samples that this mount reads and nobody has taken yet too, so that the block is decoded once.
     */
    private boolean fromSource(Load l, SampleLoc loc) {
        DatasetMount m = l.m();
        int id = loc.id();
        String url = m.index.files().get(m.index.fileOf(id)).url();
        long begin = m.index.begin(id);
        ByteBuffer tmp = null;
        ArrayBlock block;
        for (long backoff = 100; ; backoff = Math.min(backoff * 2, 5000)) {
            try {
                block = loc.length() == 0 ? null : source.block(url, begin);
                if (block == null) {
                    tmp = tmp == null ? ByteBuffer.allocate((int) loc.length()) : tmp.clear();
                    source.read(url, begin, tmp);
                }
                m.loadError = "";
                break;
            } catch (UndecodableException e) { // the same every time: give the sample up, readers get the error
                failed(m, loc, "sample " + id + " of " + url + " cannot be loaded: " + e.getMessage());
                return true;
            } catch (IOException | UncheckedIOException e) {
                m.loadError = "reading sample " + id + " from " + url + ": " + e.getMessage() + " (retrying)";
                if (!current.test(m) || !pause(backoff)) {
                    return false;
                }
            }
        }
        sourced(l, loc, block == null ? tmp.flip() : block.slice(begin, (int) loc.length()));
        if (block != null) {
            fillBlock(l, id, block);
        }
        return true;
    }

    /** Gives sample {@code loc} up for good: its readers get {@code why}, and so does the mount's status. */
    private static void failed(DatasetMount m, SampleLoc loc, String why) {
        m.fail(why);
        loc.buf().fail(loc.i(), why);
    }

    /**
     * Fills the block's other samples that this mount reads (the samples of the same source next to
     * {@code id} that lie in the block), unless another worker took them or the previous mount holds them.
     */
    private static void fillBlock(Load l, int id, ArrayBlock block) {
        DatasetIndex index = l.m().index;
        int f = index.fileOf(id);
        int at = index.offsetInFile(id, f);
        int base = id - at;
        DatasetIndex.File file = index.files().get(f);
        for (int j = at - 1; j >= 0 && inside(file, j, block); j--) {
            offer(l, base + j, file.begins()[j], block);
        }
        for (int j = at + 1; j < file.samples() && inside(file, j, block); j++) {
            offer(l, base + j, file.begins()[j], block);
        }
    }

    /** True if sample {@code j} of the file lies in the block (the samples next to it are scanned while they do). */
    private static boolean inside(DatasetIndex.File file, int j, ArrayBlock block) {
        return file.begins()[j] >= block.begin() && file.ends()[j] <= block.end();
    }

    /** Fills sample {@code id} (at byte {@code begin} of its source) from the block if it is this mount's and free. */
    private static void offer(Load l, int id, long begin, ArrayBlock block) {
        SampleLoc loc = l.m().find(id);
        if (loc == null || loc.length() == 0) {
            return; // another daemon's (or no local rank reads it)
        }
        if (!(l.old() != null && l.old().holds(id)) && loc.buf().claim(loc.i())) {
            sourced(l, loc, block.slice(begin, (int) loc.length()));
        }
    }

    private static void sourced(Load l, SampleLoc loc, ByteBuffer bytes) {
        fill(l, loc, bytes);
        l.m().fromSource.incrementAndGet(); DatasetMetrics.SAMPLES.labels("source").inc();
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

    private static void fill(Load l, SampleLoc loc, ByteBuffer bytes) {
        DatasetMount m = l.m();
        m.loadedBytes.addAndGet(bytes.remaining());
        loc.buf().fill(loc.i(), bytes);
        if (l.firstLeft().get() > 0 && m.inFirstBatch(loc.id()) && l.firstLeft().decrementAndGet() == 0) {
            m.firstBatchNanos = System.nanoTime() - m.mountedNanos;
        }
    }

    /** Asks one peer for the samples; returns those it did not have. */
    private List<SampleLoc> fromPeer(Load l, String peer, List<SampleLoc> wanted) {
        DatasetMount m = l.m();
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
            if (!loc.buf().claim(loc.i())) {
                continue; // filled with a decoded block of its source meanwhile
            }
            fill(l, loc, bytes);
            m.fromPeers.incrementAndGet(); DatasetMetrics.SAMPLES.labels("peer").inc();
        }
        return rest;
    }
}
