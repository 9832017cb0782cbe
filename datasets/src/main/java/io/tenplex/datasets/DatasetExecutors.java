package io.tenplex.datasets;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The threads of the dataset mounts, made by whoever composes the daemon and handed to
 * {@link DatasetService}, which then owns them (it shuts them down when closed).
 *
 * @param loaders loading samples and serving view reads (they block on sources and on samples
 *     still loading)
 * @param requests mount requests: fetching and parsing indexes, allocating (bounded: beyond its
 *     queue a request is refused)
 * @param requestCapacity requests that may run or wait at once, for the refusal's message
 */
public record DatasetExecutors(ExecutorService loaders, ExecutorService requests, int requestCapacity) {
    /** Threads that fetch and parse indexes and allocate mounts (never on an event loop). */
    public static final int REQUEST_THREADS = 4;
    /** Mount requests waiting for a request thread; more are refused with 503. */
    public static final int REQUEST_QUEUE = 64;

    /** Loaders on demand, {@value #REQUEST_THREADS} request threads with {@value #REQUEST_QUEUE} waiting. */
    public static DatasetExecutors standard() {
        return standard(Executors.newCachedThreadPool(named("tenplex-data-load")));
    }

    /** The given loaders, {@value #REQUEST_THREADS} request threads with {@value #REQUEST_QUEUE} waiting. */
    public static DatasetExecutors standard(ExecutorService loaders) {
        ThreadPoolExecutor requests = new ThreadPoolExecutor(REQUEST_THREADS, REQUEST_THREADS, 30, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(REQUEST_QUEUE), named("tenplex-data-request"));
        requests.allowCoreThreadTimeOut(true);
        return new DatasetExecutors(loaders, requests, REQUEST_THREADS + REQUEST_QUEUE);
    }

    private static ThreadFactory named(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    void shutdownNow() {
        requests.shutdownNow();
        loaders.shutdownNow();
    }
}
