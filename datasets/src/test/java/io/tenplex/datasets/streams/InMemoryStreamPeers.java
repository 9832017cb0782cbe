package io.tenplex.datasets.streams;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** Peers that are other {@link StreamService}s in this JVM, by address (the fake at the wire's edge). */
final class InMemoryStreamPeers implements StreamPeers {
    final Map<String, StreamService> daemons = new HashMap<>();
    /** Daemons whose imports fail (as if they went away mid-way). */
    final java.util.Set<String> failImports = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Give-backs taken before each one fails as if its daemon went away (negative: none fails). */
    final java.util.concurrent.atomic.AtomicInteger giveBacksBeforeFailing = new java.util.concurrent.atomic.AtomicInteger(-1);
    /** Counted down at each give-back refused because its daemon is in {@link #failImports}. */
    volatile java.util.concurrent.CountDownLatch refusedGiveBacks = new java.util.concurrent.CountDownLatch(0);
    /** Export pages handed over so far. */
    final java.util.concurrent.atomic.AtomicInteger pages = new java.util.concurrent.atomic.AtomicInteger();

    /** Every daemon started here (and others added), closed by {@link #closeAll}. */
    final List<StreamService> started = new java.util.ArrayList<>();

    /** A daemon's stream service at {@code host:port}, joined to the others. */
    StreamService start(String addr) {
        StreamService s = new StreamService(this);
        s.setSelf(addr.substring(0, addr.indexOf(':')), Integer.parseInt(addr.substring(addr.indexOf(':') + 1)));
        daemons.put(addr, s);
        started.add(s);
        return s;
    }

    void closeAll() {
        started.forEach(StreamService::close);
    }

    private StreamService at(String peer) {
        StreamService s = daemons.get(peer);
        if (s == null) {
            throw new IllegalStateException("no daemon at " + peer);
        }
        return s;
    }

    @Override
    public void ping(String peer) {
        at(peer);
    }

    @Override
    public void create(String peer, String job, StreamConfig config) {
        at(peer).createLocal(job, config);
    }

    @Override
    public void configure(String peer, String job, StreamConfig config, boolean frozen) {
        at(peer).configure(job, config, frozen);
    }

    @Override
    public void export(String peer, String job, List<String> expectedRanks,
            Consumer<Map<Integer, List<Sample>>> page) {
        at(peer).exportAll(job, expectedRanks, p -> {
            pages.incrementAndGet();
            page.accept(p);
        });
    }

    @Override
    public void importSamples(String peer, String job, Map<Integer, List<Sample>> byRank) {
        if (failImports.contains(peer)) {
            throw new IllegalStateException("daemon " + peer + " unreachable for import");
        }
        at(peer).importLocal(job, byRank);
    }

    @Override
    public void giveBack(String peer, String job, int rank, List<Sample> samples) {
        if (failImports.contains(peer) || giveBacksBeforeFailing.getAndDecrement() == 0) {
            refusedGiveBacks.countDown();
            throw new IllegalStateException("daemon " + peer + " unreachable for a give-back");
        }
        at(peer).giveBack(job, rank, samples);
    }

    @Override
    public int closes(String peer, String job) {
        return at(peer).config(job).closes();
    }

    @Override
    public void unfreeze(String peer, String job) {
        at(peer).unfreezeLocal(job);
    }

    @Override
    public void end(String peer, String job) {
        at(peer).endLocal(job);
    }

    @Override
    public void delete(String peer, String job) {
        at(peer).deleteLocal(job);
    }
}
