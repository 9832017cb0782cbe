package io.tenplex.transform;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * A flow's pieces of late ranks (being rebuilt), handed out in the order they become readable rather
 * than the order they were queued: a lane takes the first piece whose tensor is ready, and waits for
 * any while none is, so a lane never sits on a tensor solved last while an earlier one could be read.
 * A piece whose readiness failed is handed out too (its read fails the run, naming why).
 */
final class LateQueue<T> {
    /** How long a waiting lane sleeps on the readiness futures before it looks at the run's failure again. */
    private static final long SLICE_MILLIS = 200;
    private final List<T> tasks = new ArrayList<>();
    private final Function<T, CompletableFuture<?>> readable;

    LateQueue(Function<T, CompletableFuture<?>> readable) {
        this.readable = readable;
    }

    synchronized void add(T task) {
        tasks.add(task);
    }

    synchronized int size() {
        return tasks.size();
    }

    /**
     * The first task that can be read now, waiting until one can; null once none is left or
     * {@code stop} answers true (the run failed).
     */
    T take(BooleanSupplier stop) throws InterruptedException {
        while (!stop.getAsBoolean()) {
            List<CompletableFuture<?>> waits = new ArrayList<>();
            synchronized (this) {
                for (Iterator<T> it = tasks.iterator(); it.hasNext(); ) {
                    T t = it.next();
                    CompletableFuture<?> f = readable.apply(t);
                    if (f.isDone()) {
                        it.remove();
                        return t;
                    }
                    waits.add(f);
                }
            }
            if (waits.isEmpty()) {
                return null;
            }
            try {
                CompletableFuture.anyOf(waits.toArray(CompletableFuture[]::new)).get(SLICE_MILLIS, TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                // failed readiness is handed out on the next look; a timeout looks at the failure again
            }
        }
        return null;
    }
}
