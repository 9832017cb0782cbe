package io.tenplex.jobs.shared;

import io.tenplex.store.DataRef;
import io.tenplex.store.memory.OutOfBudgetException;
import io.tenplex.store.memory.SharedSegment;
import io.tenplex.store.memory.SharedSegments;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The copies a load pin makes of its tensors that do not lie in shared memory (a reconfiguration's
 * moved shards, tensors uploaded over REST): one segment of the pin's own holding them all, so
 * that the client maps every tensor instead of asking for each over REST. Best effort: when the
 * memory budget has no room to spare for the copy now (it would leave less than a quarter of the
 * budget free: saves and reconfigurations need that memory more) or the system has none, those
 * tensors are read over REST as before. The copies are the pin's: nothing in the store changes, and they go when the pin ends.
 */
final class LoadCopies {
    private static final Logger LOG = LoggerFactory.getLogger(LoadCopies.class);
    /** A copy is made only when it leaves this share of the budget free (1/4). */
    static final int SPARE_SHARE = 4;

    /** The segment holding the copies (one reference, the caller's) and each copy's offset in it. */
    record Copied(SharedSegment segment, long[] offsets) {
    }

    private LoadCopies() {
    }

    /** Copies {@code refs} into one new segment; null when there is nothing to copy or no room now. */
    static Copied copy(SharedSegments segments, List<DataRef> refs) {
        if (segments == null || refs.isEmpty()) {
            return null;
        }
        long[] offsets = new long[refs.size()];
        long at = SharedSegment.HEADER;
        try {
            for (int i = 0; i < offsets.length; i++) {
                long size = refs.get(i).size();
                at = SharedSaves.align(at, size);
                offsets[i] = at;
                at = Math.addExact(at, size);
            }
        } catch (ArithmeticException e) {
            return null; // no store holds that much: leave them to REST
        }
        if (!segments.roomToSpare(at - SharedSegment.HEADER, SPARE_SHARE)) {
            LOG.debug("no room to spare for a load's {} copied tensors ({} bytes) now", refs.size(), at);
            return null;
        }
        SharedSegment seg;
        try {
            seg = segments.acquire(at - SharedSegment.HEADER);
        } catch (OutOfBudgetException | IOException e) {
            LOG.debug("no shared memory for a load's {} copied tensors ({} bytes) now: {}", refs.size(), at, e.toString());
            return null;
        }
        try {
            for (int i = 0; i < offsets.length; i++) {
                DataRef ref = refs.get(i);
                long done = 0;
                for (ByteBuffer view : seg.views(offsets[i], ref.size())) {
                    int n = view.remaining();
                    ref.copyTo(done, n, view);
                    done += n;
                }
            }
        } catch (RuntimeException e) {
            seg.release();
            throw e;
        }
        return new Copied(seg, offsets);
    }
}
