package io.tenplex.jobs;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The executors the job lifecycle runs on, created and closed by the caller (the daemon).
 *
 * @param readers range reads of parts (two per source worker at a time)
 * @param background coordinators, parts and resource changes (they wait a lot)
 * @param timer prepared parts that wait for a decision
 */
public record JobExecutors(ExecutorService readers, ExecutorService background, ScheduledExecutorService timer)
        implements AutoCloseable {

    /** The daemon's pools: {@code tenplex-fetch} (64 threads), {@code tenplex-job} and {@code tenplex-indoubt}. */
    public static JobExecutors standard() {
        return new JobExecutors(Executors.newFixedThreadPool(64, named("tenplex-fetch")),
                Executors.newCachedThreadPool(named("tenplex-job")),
                Executors.newSingleThreadScheduledExecutor(named("tenplex-indoubt")));
    }

    /** Daemon threads named {@code name-N}. */
    public static ThreadFactory named(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /** Stops every pool at once (running work is interrupted). */
    @Override
    public void close() {
        timer.shutdownNow();
        readers.shutdownNow();
        background.shutdownNow();
    }
}
