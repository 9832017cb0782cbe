package io.tenplex.jobs;

import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Several simulated daemons in one process, without sockets: each has its own store and
 * {@link Jobs}; they reach each other through one {@link FakeDaemonClient}. The registries' clock can
 * be moved forward. Closing frees every store (and fails if memory leaked).
 */
public final class FakeCluster implements AutoCloseable {
    private final ExecutorService network = Executors.newCachedThreadPool();
    private final JobExecutors executors = new JobExecutors(Executors.newFixedThreadPool(8),
            Executors.newCachedThreadPool(), Executors.newSingleThreadScheduledExecutor());
    private final FakeDaemonClient client = new FakeDaemonClient(network);
    private final List<TensorStore> stores = new ArrayList<>();
    private final List<Jobs> jobs = new ArrayList<>();
    private final Map<Integer, InetSocketAddress> daemons = new LinkedHashMap<>();
    /** Added to System.nanoTime() for the registries (entries record their end with System.nanoTime()). */
    private final AtomicLong offset = new AtomicLong();

    /** {@code workers} daemons (worker w at 127.0.0.1:7000+w, never connected to). */
    public FakeCluster(int workers) {
        for (int w = 0; w < workers; w++) {
            TensorStore store = new TensorStore(new Allocator(256L << 20));
            Jobs j = new Jobs(store, client, client, executors, new StopFlags(), Duration.ofMinutes(30),
                    () -> System.nanoTime() + offset.get());
            InetSocketAddress a = new InetSocketAddress("127.0.0.1", 7000 + w);
            j.setDefaultDaemons(Map.of()); // set below, once all are known
            j.setSelfAddress(a);
            stores.add(store);
            jobs.add(j);
            daemons.put(w, a);
            client.add(a, new FakeDaemonClient.Daemon(j, store));
        }
        jobs.forEach(j -> j.setDefaultDaemons(daemons));
    }

    public Jobs jobs(int worker) {
        return jobs.get(worker);
    }

    public TensorStore store(int worker) {
        return stores.get(worker);
    }

    public List<TensorStore> stores() {
        return stores;
    }

    public InetSocketAddress address(int worker) {
        return daemons.get(worker);
    }

    public Map<Integer, InetSocketAddress> daemons() {
        return Map.copyOf(daemons);
    }

    public FakeDaemonClient client() {
        return client;
    }

    /** Moves the registries' clock forward. */
    public void advance(Duration d) {
        offset.addAndGet(d.toNanos());
    }

    @Override
    public void close() {
        // parts still running (an aborted part ends its execution before it drops its staging) finish
        // first: the stores close only when nothing writes into them any more
        executors.timer().shutdownNow();
        finish(executors.background());
        finish(executors.readers());
        finish(network);
        stores.forEach(TensorStore::close);
    }

    private static void finish(java.util.concurrent.ExecutorService pool) {
        pool.shutdown();
        try {
            if (!pool.awaitTermination(60, java.util.concurrent.TimeUnit.SECONDS)) {
                throw new IllegalStateException("work of the fake daemons still running after 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
