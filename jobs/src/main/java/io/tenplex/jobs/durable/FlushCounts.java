package io.tenplex.jobs.durable;

import java.util.concurrent.atomic.AtomicLong;

/**
 * One job's durable flushes on this daemon since it started: written, failed for want of room
 * ({@code noSpace}) or for another reason, the bytes written to packs, and the durable generations
 * removed to make room on a full disk. Read by {@code /metrics} while flushes update it.
 */
public final class FlushCounts {
    final AtomicLong written = new AtomicLong();
    final AtomicLong noSpace = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final AtomicLong bytesWritten = new AtomicLong();
    final AtomicLong evicted = new AtomicLong();

    public long written() {
        return written.get();
    }

    public long noSpace() {
        return noSpace.get();
    }

    public long failed() {
        return failed.get();
    }

    public long bytesWritten() {
        return bytesWritten.get();
    }

    public long evicted() {
        return evicted.get();
    }
}
