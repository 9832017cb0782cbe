package io.tenplex.jobs;

import io.tenplex.jobs.common.Broadcast;
import io.tenplex.jobs.common.DaemonCallException;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.generations.SavesInFlight;
import io.tenplex.store.DeleteCounts;
import io.tenplex.store.JobNamespace;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes a job from the daemons of its cluster ({@code tenplex rm}): its whole tree (saves,
 * generations, partner copies, parity, what ranks load), its stop flag, and what other components keep
 * of it outside the tree ({@link Resource}s: streams, dataset mounts, rehearsal buffers, durable files),
 * so the memory is given back and a new job of the name starts clean. Refused while a reconfiguration
 * or resource change of the job runs on any of them (every daemon is asked first, nothing removed).
 */
public final class JobRemoval {
    private static final Logger LOG = LoggerFactory.getLogger(JobRemoval.class);

    /** Something a daemon keeps of a job outside its tree. */
    public interface Resource {
        /** Removes the job's; @return what was removed (for the answer), or null when there was nothing */
        String remove(String job) throws IOException, InterruptedException;
    }

    /** What one daemon removed: the bytes of the job's tree, and what its resources said. */
    public record Removed(long treeBytes, List<String> resources) {
    }

    /** The answer of a removal everywhere: this daemon's part, and the other daemons told. */
    public record Answer(String job, Removed here, List<String> daemons) {
    }

    private final TensorStore store;
    private final Jobs jobs;
    private final DaemonClient client;
    private final Map<String, Resource> resources = new java.util.concurrent.ConcurrentSkipListMap<>();
    private final List<Function<String, String>> busy = new CopyOnWriteArrayList<>();

    public JobRemoval(TensorStore store, Jobs jobs, DaemonClient client) {
        this.store = store;
        this.jobs = jobs;
        this.client = client;
        busy.add(job -> jobs.running(job) ? "a reconfiguration of job " + job + " is running" : null);
    }

    /** Adds what {@code name} keeps of jobs (removed before the tree, in name order). */
    public JobRemoval add(String name, Resource r) {
        resources.put(name, r);
        return this;
    }

    /** Adds a check that answers why a job cannot be removed now (null: it can). */
    public JobRemoval addBusyCheck(Function<String, String> why) {
        busy.add(why);
        return this;
    }

    /**
     * Removes {@code job} here and on every other daemon of the cluster ({@code given}, or the
     * daemon's peers): prepares all of them first ({@link #prepare}: each checks that it could, holds
     * back the job's saves and waits for those in flight, so that no seal and no notice of one is in
     * flight anywhere once all are prepared), then removes it on the others, then here.
     *
     * @throws StoreException not found when this daemon does not know the job; conflict naming
     *     {@code tenplex cancel} while a change runs on any daemon, or naming the saves still in flight
     *     (nothing removed, the saves held back go on)
     * @throws IOException naming the daemons that could not remove it
     */
    public Answer removeEverywhere(String job, Map<Integer, InetSocketAddress> given)
            throws IOException, InterruptedException {
        JobNamespace.requireValidName(job);
        jobs.requireKnown(job);
        Map<Integer, InetSocketAddress> others = new java.util.TreeMap<>(jobs.daemons(given));
        others.values().removeIf(this::isSelf);
        prepare(job);
        try {
            askFirst(job, others);
        } catch (IOException | InterruptedException | RuntimeException e) {
            Broadcast.toAll(others, a -> client.removeJob(a, job, DaemonClient.RemovalStep.RELEASE));
            release(job);
            throw e;
        }
        List<String> failed = wait(Broadcast.toAll(others, a -> client.removeJob(a, job,
                DaemonClient.RemovalStep.REMOVE)));
        Removed here = removeHere(job);
        if (!failed.isEmpty()) {
            throw new IOException("job " + job + " was removed here but not on " + String.join("; ", failed)
                    + " (run tenplex rm " + job + " again)");
        }
        List<String> told = others.entrySet().stream().map(e -> "worker " + e.getKey() + " at " + e.getValue()).toList();
        return new Answer(job, here, told);
    }

    /**
     * Prepares the job's removal here: {@link #check}s that it could, then holds back the job's saves
     * and waits for those in flight ({@link SavesInFlight#prepare}) until the removal or {@link #release}.
     */
    public void prepare(String job) throws InterruptedException {
        check(job);
        jobs.savesInFlight().prepare(job, SavesInFlight.DEFAULT_WAIT);
    }

    /** Lets the saves held back by {@link #prepare} go on: the removal was refused elsewhere. */
    public void release(String job) {
        jobs.savesInFlight().release(JobNamespace.requireValidName(job));
    }

    /** Refuses (conflict naming {@code tenplex cancel}) while something of the job runs here. */
    public void check(String job) {
        JobNamespace.requireValidName(job);
        for (Function<String, String> b : busy) {
            String why = b.apply(job);
            if (why != null) {
                throw StoreException.conflict(why + "; wait for it to end, or cancel a resource change that still "
                        + "waits for the save with `tenplex cancel " + job + "`, then remove the job");
            }
        }
    }

    /**
     * Removes what this daemon holds of the job (nothing held: nothing to do): only ever below
     * {@code /job/<job>} of a valid name. It excludes the job's seals and commits here
     * ({@link SavesInFlight}): it waits for those in flight (at most {@link SavesInFlight#DEFAULT_WAIT}),
     * and those that come meanwhile wait for it, then save into the clean job.
     *
     * @throws StoreException bad request for a name that is not a job's ({@link JobNamespace#requireValidName});
     *     conflict naming the saves still in flight after the wait (nothing removed)
     */
    public Removed removeHere(String job) throws IOException, InterruptedException {
        check(job);
        return jobs.savesInFlight().excluding(job, SavesInFlight.DEFAULT_WAIT, () -> removeNow(job));
    }

    private Removed removeNow(String job) throws IOException, InterruptedException {
        jobs.stopFlags().forget(job);
        List<String> said = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        for (Map.Entry<String, Resource> r : resources.entrySet()) {
            try {
                String s = r.getValue().remove(job);
                if (s != null) {
                    said.add(r.getKey() + ": " + s);
                }
            } catch (IOException | RuntimeException e) {
                failed.add(r.getKey() + ": " + e.getMessage());
            }
        }
        if (!failed.isEmpty()) {
            throw new IOException("job " + job + " could not be removed (its tree is kept; run tenplex rm " + job
                    + " again): " + String.join("; ", failed));
        }
        long bytes = 0;
        StorePath tree = JobNamespace.root(job); // one directory below /job, never /job itself
        if (store.stat(tree).isPresent()) {
            DeleteCounts d = store.delete(tree);
            bytes = d.bytes();
        }
        jobs.forget(job);
        LOG.info("job removed job={} bytes={} {}", job, bytes, said);
        return new Removed(bytes, said);
    }

    /** Whether {@code a} is this daemon's address among its peers (asking itself would only repeat the work). */
    private boolean isSelf(InetSocketAddress a) {
        java.util.OptionalInt self = jobs.selfWorker();
        return self.isPresent() && a.equals(jobs.daemons(Map.of()).get(self.getAsInt()));
    }

    private static List<String> wait(java.util.concurrent.CompletableFuture<List<String>> f)
            throws IOException, InterruptedException {
        try {
            return f.get();
        } catch (ExecutionException e) {
            throw new IOException(e.getCause());
        }
    }

    /**
     * Prepares the removal on every other daemon: whether it could remove the job, holding back the
     * job's saves there ({@link #prepare}).
     *
     * @throws StoreException conflict when one answered that a change of the job runs there, or that
     *     saves of it are still in flight
     * @throws IOException naming the daemons that did not answer or refused otherwise
     */
    private void askFirst(String job, Map<Integer, InetSocketAddress> others) throws IOException, InterruptedException {
        Map<Integer, java.util.concurrent.CompletableFuture<Void>> asked = new java.util.TreeMap<>();
        others.forEach((w, a) -> asked.put(w, client.removeJob(a, job, DaemonClient.RemovalStep.PREPARE)));
        List<String> failed = new ArrayList<>();
        boolean busyThere = false;
        for (Map.Entry<Integer, java.util.concurrent.CompletableFuture<Void>> e : asked.entrySet()) {
            try {
                e.getValue().get();
            } catch (ExecutionException x) {
                Throwable t = x.getCause();
                busyThere |= t instanceof DaemonCallException d && d.kind() == DaemonCallException.Kind.CONFLICT;
                failed.add("worker " + e.getKey() + " at " + others.get(e.getKey()) + ": " + t.getMessage());
            }
        }
        if (!failed.isEmpty()) {
            String text = "job " + job + " cannot be removed (nothing was removed): " + String.join("; ", failed);
            if (busyThere) {
                throw StoreException.conflict(text);
            }
            throw new IOException(text);
        }
    }
}
