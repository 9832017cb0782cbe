package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.adapters.kubernetes.KubernetesAdapter.Change;
import io.tenplex.adapters.kubernetes.KubernetesAdapter.Status;
import io.tenplex.adapters.kubernetes.PodMembership.Membership;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the Kubernetes adapter saw and did: its evaluations, the pods observed, the devices applied
 * or refused, the change running and those asked for, the published assignment and its last events.
 * The fields are guarded by this object's monitor, whose waiters are woken at each update; a
 * {@link Status} is their snapshot.
 */
final class AdapterState {
    private static final Logger LOG = LoggerFactory.getLogger(KubernetesAdapter.class);
    private static final int KEPT_EVENTS = 200;

    private final long started = System.nanoTime();
    long evaluations;
    /** Evaluations scheduled or running. */
    int queued;
    Membership observed;
    Map<String, Integer> applied;
    Map<String, Integer> refused;
    String running;
    final List<Change> changes = new ArrayList<>();
    private final Deque<String> events = new ArrayDeque<>();
    JsonNode assignment;
    /** How the followed JobSet ended ({@code Completed}, {@code Failed}), else null. */
    String ended;
    /** The first pod seen succeeded (its launcher saw the job end), else null. */
    String finished;

    synchronized void event(String what) {
        String line = String.format(java.util.Locale.ROOT, "%.3fs %s", (System.nanoTime() - started) / 1e9, what);
        events.addLast(line);
        while (events.size() > KEPT_EVENTS) {
            events.removeFirst();
        }
        LOG.info("{}", what);
        notifyAll();
    }

    synchronized Status status() {
        return new Status(evaluations, observed == null ? null : observed.toString(),
                applied == null ? null : Map.copyOf(applied), running, List.copyOf(changes), List.copyOf(events),
                assignment == null ? null : assignment.deepCopy(), queued == 0, ended);
    }

    /** Waits until the status satisfies {@code until}; returns it, or throws on timeout. */
    Status await(Predicate<Status> until, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            while (true) {
                Status s = status();
                if (until.test(s)) {
                    return s;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("timed out after " + timeout + "; last status: " + s);
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }
}
