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
 * tensors are read over REST, and the pin says why ({@link Outcome#restReason}), so that the rank's log
 * and its downtime report can. The copies are the pin's: nothing in the store changes, and they go
 * when the pin ends.
 */
final class LoadCopies {
    private static final Logger LOG = LoggerFactory.getLogger(LoadCopies.class);
    /** A copy is made only when it leaves this share of the budget free (1/4). */
    static final int SPARE_SHARE = 4;

    /** The segment holding the copies (one reference, the caller's), each copy's offset in it, and their bytes. */
    record Copied(SharedSegment segment, long[] offsets, long bytes) {
    }

    /** The copies, or (null) why the tensors are left to REST (null too when there was nothing to copy). */
    record Outcome(Copied copied, String restReason) {
        static final Outcome NOTHING = new Outcome(null, null);
    }

    private LoadCopies() {
    }

    /** Copies {@code refs} into one new segment, or says why not (no room now, no shared memory). */
    static Outcome copy(SharedSegments segments, List<DataRef> refs) {
        if (refs.isEmpty()) {
            return Outcome.NOTHING;
        }
        if (segments == null) {
            return new Outcome(null, "the daemon has no shared memory to copy them into");
        }
        long[] offsets = new long[refs.size()];
        long at = SharedSegment.HEADER;
        try {
            for (int i = 0; i < offsets.length; i++) {
                long size = refs.get(i).size();
                at = SharedSegment.align(at, size);
                offsets[i] = at;
                at = Math.addExact(at, size);
            }
        } catch (ArithmeticException e) {
            return new Outcome(null, "their " + refs.size() + " tensors together are larger than any segment");
        }
        long bytes = at - SharedSegment.HEADER;
        if (!segments.roomToSpare(bytes, SPARE_SHARE)) {
            return refused(refs.size(), bytes, "copying them into shared memory (" + bytes + " bytes) would leave less "
                    + "than 1/" + SPARE_SHARE + " of the daemon's memory budget free now (saves and reconfigurations "
                    + "need it more; a larger --memory-limit avoids this)");
        }
        SharedSegment seg;
        try {
            seg = segments.acquire(bytes);
        } catch (OutOfBudgetException | IOException e) {
            return refused(refs.size(), bytes, "no shared memory for a copy of " + bytes + " bytes now: " + e.getMessage());
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
        return new Outcome(new Copied(seg, offsets, refs.stream().mapToLong(DataRef::size).sum()), null);
    }

    private static Outcome refused(int tensors, long bytes, String why) {
        LOG.info("a load's {} tensors outside shared memory ({} bytes) are left to REST: {}", tensors, bytes, why);
        return new Outcome(null, why);
    }
}
