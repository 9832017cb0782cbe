package io.tenplex.datasets.streams;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A daemon-wide budget for the bytes of the streamed samples its buffers hold (they live in the
 * heap): a push is taken only when its bytes fit (else the producer is told to push again, or, when
 * it could never fit, that there is no room); samples moved in by a re-partitioning or given back
 * are always taken (none is lost), and may pass the budget for a while.
 */
public final class StreamMemory {
    /** The default budget's share of the JVM's largest heap. */
    public static final double DEFAULT_HEAP_SHARE = 0.25;

    private final long budget;
    private final AtomicLong used = new AtomicLong();

    /** @param budget bytes, at least 1 */
    public StreamMemory(long budget) {
        if (budget < 1) {
            throw new IllegalArgumentException("stream memory " + budget + " bytes (expected: >= 1)");
        }
        this.budget = budget;
    }

    /** A quarter of the JVM's largest heap. */
    public static StreamMemory ofMaxHeap() {
        return new StreamMemory((long) (Runtime.getRuntime().maxMemory() * DEFAULT_HEAP_SHARE));
    }

    static StreamMemory unlimited() {
        return new StreamMemory(Long.MAX_VALUE);
    }

    public long budget() {
        return budget;
    }

    public long used() {
        return used.get();
    }

    /** Takes {@code n} bytes if they fit the budget. */
    boolean tryReserve(long n) {
        long now;
        do {
            now = used.get();
            if (now + n > budget) {
                return false;
            }
        } while (!used.compareAndSet(now, now + n));
        return true;
    }

    /** Takes {@code n} bytes whether or not they fit (moved or given-back samples). */
    void force(long n) {
        used.addAndGet(n);
    }

    void release(long n) {
        used.addAndGet(-n);
    }
}
