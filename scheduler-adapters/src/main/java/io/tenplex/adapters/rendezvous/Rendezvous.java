package io.tenplex.adapters.rendezvous;

import io.tenplex.jobs.common.Limits;
import io.tenplex.store.StoreException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.regex.Pattern;

/**
 * The torchrun rendezvous of this daemon's jobs ({@code torchrun --rdzv-backend tenplex --rdzv-id JOB}):
 * one {@link RendezvousRun} per job. A run that closed (the job ended) is replaced by a new one when a
 * node it does not know joins: the job runs again. Thread-safe.
 */
public final class Rendezvous {
    /** At most this many jobs have a run; the oldest closed one goes first. */
    static final int MAX_RUNS = 4096;
    /** A torchrun node has at most this many processes, a run at most this many nodes. */
    static final int MAX_NPROC = 4096;
    static final int MAX_NODES = 1024;
    /** The longest a node not heard from is kept (a silent node holds a place meanwhile). */
    static final int MAX_KEEP_ALIVE = 300;
    /** The most nodes the runs of this daemon know together. */
    static final int MAX_KNOWN = 16384;
    private static final Pattern NODE = Pattern.compile("[A-Za-z0-9._:@-]{1,128}");

    /** What a node says when it joins. */
    public record Join(String node, String secret, int nproc, String daemon, int minNodes, int maxNodes, double lastCallSeconds,
            double keepAliveSeconds) {
        /** @throws IllegalArgumentException a value out of its range (the message says which) */
        public Join {
            Rendezvous.node(node);
            if (nproc < 1 || nproc > MAX_NPROC) {
                throw new IllegalArgumentException("\"nproc\" must be 1 to " + MAX_NPROC + ", got " + nproc);
            }
            if (minNodes < 1 || maxNodes < minNodes || maxNodes > MAX_NODES) {
                throw new IllegalArgumentException("\"minNodes\" and \"maxNodes\" must satisfy 1 <= minNodes <= maxNodes <= "
                        + MAX_NODES + ", got " + minNodes + ":" + maxNodes);
            }
            if ((long) nproc * maxNodes > Limits.MAX_RANKS) {
                throw new IllegalArgumentException("a run of " + maxNodes + " nodes of " + nproc + " processes could have "
                        + (long) nproc * maxNodes + " ranks; a job has at most " + Limits.MAX_RANKS);
            }
            seconds("lastCallSeconds", lastCallSeconds);
            seconds("keepAliveSeconds", keepAliveSeconds);
            if (keepAliveSeconds < 1 || keepAliveSeconds > MAX_KEEP_ALIVE) {
                throw new IllegalArgumentException("\"keepAliveSeconds\" must be 1 to " + MAX_KEEP_ALIVE + ", got "
                        + keepAliveSeconds);
            }
        }
    }

    private final RendezvousJobs jobs;
    private final LongSupplier clock;
    private final Map<String, RendezvousRun> runs = new LinkedHashMap<>();

    public Rendezvous(RendezvousJobs jobs) {
        this(jobs, System::nanoTime);
    }

    /** @param clock nanoseconds, comparable with what {@link RendezvousJobs#lastStopRead} answers */
    Rendezvous(RendezvousJobs jobs, LongSupplier clock) {
        this.jobs = jobs;
        this.clock = clock;
    }

    /** @throws IllegalArgumentException not a node id (1 to 128 of letters, digits and {@code ._:@-}, not . or ..) */
    public static String node(String node) {
        if (node == null || !NODE.matcher(node).matches() || node.equals(".") || node.equals("..")) {
            throw new IllegalArgumentException("a node id is 1 to 128 letters, digits and . _ : @ -, got "
                    + (node == null ? "none" : "'" + node.substring(0, Math.min(64, node.length())) + "'"));
        }
        return node;
    }

    private static void seconds(String field, double s) {
        if (!(s >= 0 && s <= 3600)) {
            throw new IllegalArgumentException("\"" + field + "\" must be 0 to 3600 seconds, got " + s);
        }
    }

    /**
     * {@code j.node} asks to be in the job's next round.
     *
     * @throws StoreException conflict: the run closed (the job ended) and knows the node, or its bounds differ
     */
    public synchronized RendezvousStatus join(String job, Join j) {
        long now = clock.getAsLong();
        RendezvousRun run = runs.get(job);
        boolean fresh = run == null || run.closed() && !run.knows(j.node());
        if (fresh && j.secret() != null) {
            throw StoreException.conflict("node " + j.node() + " carries a secret of a run of job " + job + " that is "
                    + "gone (closed and replaced, or removed with the job): join without it as a new node");
        }
        if (!fresh) {
            check(run, job, j);
        }
        if ((fresh || !run.knows(j.node())) && runs.values().stream().mapToInt(RendezvousRun::known).sum() >= MAX_KNOWN) {
            throw StoreException.conflict("this daemon's rendezvous know " + MAX_KNOWN + " nodes, the most they keep");
        }
        if (fresh) {
            runs.remove(job);
            makeRoom(now);
            run = new RendezvousRun(job, new RendezvousRun.Bounds(j.minNodes(), j.maxNodes(),
                    nanos(j.lastCallSeconds()), nanos(j.keepAliveSeconds())), jobs);
            runs.put(job, run); // every check passed: a refused join leaves no run behind
        }
        int asked;
        try {
            asked = run.join(j.node(), j.secret(), j.nproc(), j.daemon(), now);
        } catch (IllegalStateException e) {
            throw StoreException.conflict(e.getMessage());
        }
        return run.status(j.node(), false).answer(asked, run.secret(j.node()));
    }

    /** The checks of a join to an existing run, before anything changes. */
    private static void check(RendezvousRun run, String job, Join j) {
        if (run.closed()) {
            throw StoreException.conflict("the rendezvous of job " + job + " is closed: the job ended");
        }
        if (run.bounds.minNodes() != j.minNodes() || run.bounds.maxNodes() != j.maxNodes()) {
            throw StoreException.conflict("the rendezvous of job " + job + " runs with " + run.bounds.minNodes() + ":"
                    + run.bounds.maxNodes() + " nodes; node " + j.node() + " asks for " + j.minNodes() + ":"
                    + j.maxNodes() + " (torchrun --nnodes must be the same on every node)");
        }
        int nproc = run.nprocBesides(j.node());
        if (nproc != 0 && nproc != j.nproc()) {
            throw StoreException.conflict("the nodes of job " + job + " run " + nproc + " processes each; node " + j.node()
                    + " has " + j.nproc() + " (torchrun --nproc-per-node must be the same on every node)");
        }
    }

    /**
     * The job's run as {@code node} sees it (null: any node); hearing from the node (with its secret) keeps it alive.
     *
     * @throws StoreException conflict: {@code secret} is not the node's
     */
    public synchronized RendezvousStatus status(String job, String node, String secret) {
        return status(job, node, secret, false);
    }

    /** As {@link #status(String, String, String)}; {@code brief}: without members, configuration and events. */
    public synchronized RendezvousStatus status(String job, String node, String secret, boolean brief) {
        RendezvousRun run = run(job);
        long now = clock.getAsLong();
        if (node != null) {
            try {
                run.heard(node, secret, now);
            } catch (IllegalStateException e) {
                throw StoreException.conflict(e.getMessage());
            }
        }
        run.tick(now);
        return run.status(node, brief);
    }

    /** Node 0 of {@code round} publishes where the round's store is. */
    public synchronized RendezvousStatus store(String job, String node, String secret, int round, String address) {
        RendezvousRun run = open(job);
        try {
            run.heard(node, secret, clock.getAsLong());
            run.store(node, secret, round, address);
        } catch (IllegalStateException e) {
            throw StoreException.conflict(e.getMessage());
        }
        return run.status(node, false);
    }

    /** The job may have {@code nodes} nodes from now on (a scheduler's decision). */
    public synchronized RendezvousStatus target(String job, int nodes) {
        RendezvousRun run = open(job);
        run.target(nodes, clock.getAsLong());
        return run.status(null, false);
    }

    /** The job ended: its run closes; only a node of the run (with its secret) closes it. */
    public synchronized RendezvousStatus close(String job, String node, String secret) {
        RendezvousRun run = run(job);
        try {
            run.heard(node, secret, clock.getAsLong());
        } catch (IllegalStateException e) {
            throw StoreException.conflict(e.getMessage());
        }
        if (!run.knows(node)) {
            throw StoreException.conflict("node " + node + " is not in job " + job + "'s rendezvous: only its nodes close it");
        }
        run.close();
        return run.status(null, false);
    }

    /**
     * Why a resource change of {@code job} may not be posted directly (null: it may): a torchrun job whose
     * run is open decides its nodes here, and its ranks, stopped by a change it did not make, would exit
     * with no next round, which torchrun takes for the end of training.
     */
    public synchronized String refusesChanges(String job) {
        RendezvousRun run = runs.get(job);
        if (run == null || run.closed()) {
            return null;
        }
        return "job " + job + " runs under torchrun, whose nodes its rendezvous decides: change them with POST "
                + new io.tenplex.jobs.common.JobLayout(job).api("/rendezvous/target") + " {\"nodes\": N}, or by "
                + "starting or stopping a torchrun node";
    }

    /** Forgets the job's run (the job was removed); whether there was one. */
    public synchronized boolean forget(String job) {
        return runs.remove(job) != null;
    }

    /** The job's run; a conflict once it closed. */
    private RendezvousRun open(String job) {
        RendezvousRun run = run(job);
        if (run.closed()) {
            throw StoreException.conflict("the rendezvous of job " + job + " is closed: the job ended");
        }
        return run;
    }

    private RendezvousRun run(String job) {
        RendezvousRun run = runs.get(job);
        if (run == null) {
            throw StoreException.notFound("job " + job + " has no rendezvous on this daemon (no torchrun node joined it)");
        }
        return run;
    }

    /** Keeps at most {@link #MAX_RUNS} runs: drops a closed one, else one whose nodes were all dropped. */
    private void makeRoom(long now) {
        if (runs.size() < MAX_RUNS) {
            return;
        }
        String drop = runs.entrySet().stream().filter(e -> e.getValue().closed() || e.getValue().idle(now))
                .map(Map.Entry::getKey).findFirst().orElseThrow(() -> new StoreException(StoreException.Kind.CONFLICT,
                        "this daemon holds the rendezvous of " + MAX_RUNS + " running jobs; none can start until one ends"));
        runs.remove(drop);
    }

    private static long nanos(double seconds) {
        return (long) (seconds * 1e9);
    }
}
