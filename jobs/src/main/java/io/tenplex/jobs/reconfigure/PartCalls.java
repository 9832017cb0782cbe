package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.DaemonClient.PartAction;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;

/**
 * The coordinator's calls on the parts of one reconfiguration: sending each worker its part and
 * preparing them all, committing (the commit point first, then the others), aborting, and asking the
 * parts for their live status. Every answer, and the first failure, is recorded in its
 * {@link ChangeProgress}.
 */
final class PartCalls {
    private final String job;
    private final String id;
    private final long step;
    private final Map<Integer, InetSocketAddress> daemons;
    private final DaemonClient client;
    private final int central;
    private final Reconfiguration.InDoubtInfo inDoubt;
    private final Rebuilding rebuilding;
    private final ChangeProgress progress;

    /** @param central the central worker, or -1 (peer to peer) */
    PartCalls(String job, String id, long step, Map<Integer, InetSocketAddress> daemons, DaemonClient client,
            int central, Reconfiguration.InDoubtInfo inDoubt, Rebuilding rebuilding, ChangeProgress progress) {
        this.job = job;
        this.id = id;
        this.step = step;
        this.daemons = daemons;
        this.client = client;
        this.central = central;
        this.inDoubt = inDoubt;
        this.rebuilding = rebuilding;
        this.progress = progress;
    }

    /** Sends each worker its part ({@link PartPosts}) and waits until all are prepared; false when any failed. */
    boolean executeParts(List<Integer> workers, IntFunction<PlanPart> part, String planId) {
        List<CompletableFuture<PartStatus>> sent = PartPosts.postAll(workers, w -> part.apply(w).coordinated(workers,
                inDoubt.coordinator(), id, inDoubt.preparedTimeoutMillis()), (w, p) -> client.postPart(daemons.get(w), p));
        return collect(workers, sent) && prepareAll(workers, planId);
    }

    /**
     * Posts the change's definition to each worker, whose daemon plans and starts its own part
     * ({@link ChangePosts}); checks that every daemon planned the same choices (the digests agree: a
     * version skew or a bug must never move wrong bytes), then prepares them all; false when any failed.
     */
    boolean executeChanges(List<Integer> workers, io.tenplex.jobs.common.ChangeSpec spec,
            Map<String, byte[]> descriptions) {
        var answers = ChangePosts.postAll(workers, spec, descriptions, daemons, client);
        List<CompletableFuture<PartStatus>> sent = new ArrayList<>();
        answers.forEach(a -> sent.add(a.thenApply(DaemonClient.ChangeAnswer::status)));
        if (!collect(workers, sent)) {
            return false;
        }
        Map<String, List<Integer>> byDigest = new java.util.TreeMap<>();
        for (int i = 0; i < workers.size(); i++) {
            byDigest.computeIfAbsent(answers.get(i).join().planDigest(), d -> new ArrayList<>()).add(workers.get(i));
        }
        if (byDigest.size() > 1) {
            StringBuilder why = new StringBuilder("the daemons planned the change differently (a version skew?):");
            byDigest.forEach((d, ws) -> why.append(" workers ").append(ws.size() > 8 ? ws.subList(0, 8) + "..." : ws)
                    .append(" digest ").append(d, 0, Math.min(12, d.length())).append(';'));
            progress.fail(why.substring(0, why.length() - 1));
            return false;
        }
        return prepareAll(workers, id);
    }

    /** Prepares every worker's part once all are started; false when any failed. */
    private boolean prepareAll(List<Integer> workers, String planId) {
        rebuilding.onFailure(why -> { // the parts' reads of its ranks would wait for nothing: abort them at once
            if (progress.error().isEmpty()) {
                progress.fail(why);
            }
            workers.forEach(w -> call(w, planId, PartAction.ABORT));
        });
        List<CompletableFuture<PartStatus>> prepared = new ArrayList<>();
        CompletableFuture<Void> failed = new CompletableFuture<>();
        for (int w : workers) {
            prepared.add(call(w, planId, PartAction.PREPARE).whenComplete((s, e) -> {
                if (s != null) {
                    progress.part(w, s); // before a failure ends the wait: the status reports what this part did
                }
                abortOnFailure(workers, planId, w, e != null ? cause(e).getMessage() : notPrepared(s), failed);
            }));
        }
        // the first failure ends the wait: a part still reading (its in-flight pieces end first) is aborted already
        CompletableFuture.anyOf(CompletableFuture.allOf(prepared.toArray(CompletableFuture[]::new))
                .exceptionally(x -> null), failed).join();
        if (failed.isDone()) {
            return false; // each part's answer so far is recorded
        }
        boolean ok = collect(workers, prepared);
        return ok && progress.prepared(workers);
    }

    /**
     * When worker {@code w}'s part did not prepare ({@code why} not null), the change cannot commit:
     * every part is aborted at once (once), so the others stop moving rather than when the slowest
     * has moved all its bytes.
     */
    private void abortOnFailure(List<Integer> workers, String planId, int w, String why, CompletableFuture<Void> failed) {
        if (why == null || failed.isDone()) {
            return;
        }
        synchronized (failed) {
            if (failed.isDone()) {
                return;
            }
            if (progress.error().isEmpty()) {
                progress.fail("worker " + w + ": " + why);
            }
            failed.complete(null);
        }
        workers.forEach(x -> call(x, planId, PartAction.ABORT));
    }

    /** What failed, unwrapped from the future's completion. */
    private static Throwable cause(Throwable e) {
        return e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    /** Why a part that answered prepare did not prepare (it failed or was aborted), or null when it did. */
    private static String notPrepared(PartStatus s) {
        return s == null || "prepared".equals(s.state()) ? null
                : s.error() == null || s.error().isEmpty() ? "its part is " + s.state() : s.error();
    }

    /** Aborts the part of every one of {@code workers} at once, each answer (its part stopped) awaited. */
    void abortAll(List<Integer> workers) {
        List<CompletableFuture<PartStatus>> aborts = new ArrayList<>();
        for (int w : workers) {
            aborts.add(call(w, id, PartAction.ABORT));
        }
        for (CompletableFuture<PartStatus> a : aborts) {
            try {
                a.get();
            } catch (Exception e) {
                // a daemon that is down has nothing staged that survives its restart
            }
        }
    }

    /**
     * Commits the commit point (the first worker) alone, then the others at once. When the commit
     * point refuses or does not answer, nobody has committed and the caller aborts everywhere; once
     * it has committed, parts in doubt learn from it that they must commit too ({@link InDoubt}).
     *
     * @return whether the commit point committed (the others' answers and failures are recorded)
     */
    boolean commit(List<Integer> workers) {
        CommitHook.reached(0);
        int point = workers.get(0);
        if (!collect(workers.subList(0, 1), List.of(call(point, id, PartAction.COMMIT)))
                && !"committed".equals(askPart(point))) {
            return false; // the commit point did not commit (its answer may have been lost: asked once more)
        }
        CommitHook.reached(1);
        List<Integer> rest = workers.subList(1, workers.size());
        List<CompletableFuture<PartStatus>> committed = new ArrayList<>();
        for (int w : rest) {
            committed.add(call(w, id, PartAction.COMMIT));
        }
        collect(rest, committed);
        return true;
    }

    /** The state of a worker's part, asked directly (or {@link InDoubt#UNREACHABLE}). */
    private String askPart(int worker) {
        Map<Integer, String> addresses = new PlanParts.Header(job, id, step, daemons).addresses();
        return new PeerParts(job, id, addresses, "", "", client).part(worker);
    }

    /** Drops the central worker's part, if there is one (it may never have started). */
    void dropCentral() {
        if (central >= 0) {
            try {
                call(central, id + "-c", PartAction.ABORT).get();
            } catch (Exception e) {
                // the central part may never have started
            }
        }
    }

    /** Asks the part of every one of {@code workers} for its live status; completes when all answered. */
    CompletableFuture<Void> refresh(List<Integer> workers) {
        List<CompletableFuture<Void>> asks = new ArrayList<>();
        for (int w : workers) {
            asks.add(client.partStatus(daemons.get(w), job, id).thenAccept(p -> progress.part(w, p))
                    .exceptionally(t -> null)); // keep the last known status
        }
        return CompletableFuture.allOf(asks.toArray(new CompletableFuture[0]));
    }

    private boolean collect(List<Integer> workers, List<CompletableFuture<PartStatus>> calls) {
        boolean ok = true;
        for (int i = 0; i < workers.size(); i++) {
            try {
                PartStatus s = calls.get(i).get();
                progress.part(workers.get(i), s);
            } catch (Exception e) {
                ok = false;
                if (progress.error().isEmpty()) {
                    progress.fail("worker " + workers.get(i) + ": " + (e.getCause() != null ? e.getCause().getMessage()
                            : e.getMessage()));
                }
            }
        }
        return ok;
    }

    private CompletableFuture<PartStatus> call(int worker, String planId, PartAction action) {
        return client.partAction(daemons.get(worker), job, planId, action);
    }
}
