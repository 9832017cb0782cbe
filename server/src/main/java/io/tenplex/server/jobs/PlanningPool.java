package io.tenplex.server.jobs;

import io.tenplex.server.ControlHandler.Response;
import java.io.IOException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The named, bounded executor ({@code tenplex-plan}) on which the job routes plan, seal and decode
 * parts: work that can take long must not run on the server's event loop. When its queue is full,
 * requests are answered 503 at once.
 */
public final class PlanningPool implements AutoCloseable {
    static final int THREADS = 2;
    static final int QUEUE = 64;

    /** Work that answers a request; an {@link IOException} is a malformed body (400). */
    public interface Work {
        CompletableFuture<Response> run() throws IOException;
    }

    private final ThreadPoolExecutor pool;

    public PlanningPool() {
        AtomicInteger n = new AtomicInteger();
        pool = new ThreadPoolExecutor(THREADS, THREADS, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(QUEUE), r -> {
            Thread t = new Thread(r, "tenplex-plan-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /** Runs {@code work} on the pool; its answer, or 503 when {@value #QUEUE} requests already wait. */
    public CompletableFuture<Response> submit(Work work) {
        try {
            return CompletableFuture.supplyAsync(() -> {
                try {
                    return work.run();
                } catch (IOException e) {
                    throw new CompletionException(new IllegalArgumentException("bad control message: " + e.getMessage()));
                }
            }, pool).thenCompose(f -> f);
        } catch (RejectedExecutionException e) {
            return CompletableFuture.completedFuture(Response.text(503, "the daemon is busy planning (" + QUEUE
                    + " requests waiting, the limit); retry later"));
        }
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }
}
