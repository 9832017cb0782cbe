package io.tenplex.datasets.rehearsal;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * How a daemon's rehearsal buffers talk to the other daemons of the job: the counts they hold, the
 * representatives in given slots (one call per daemon for all its picks: the paper's RPC
 * consolidation), and the two phases of a re-partition. The wire lives with the implementation (the
 * server module's {@code HttpRehearsalPeers}); calls never block the caller.
 */
public interface RehearsalPeers {
    /**
     * A daemon's answer to "what do you hold of this job": its id, the job's configuration there (null:
     * no buffer of the job) and per rank the counts per class.
     */
    record Counts(String daemon, RehearsalConfig config, Map<Integer, int[]> ranks) {
    }

    /** A representative's place on a daemon. */
    record Slot(int rank, int cls, int slot) {
    }

    /** A representative's place in the cluster: the holding daemon's id, and the slot there. */
    record Ref(String daemon, Slot slot) {
    }

    /**
     * A daemon's part of a re-partition: the job's configuration, the address of every daemon holding
     * representatives (by id), and per new rank that this daemon will hold, where its representatives are.
     */
    record Moves(RehearsalConfig config, Map<String, String> daemons, Map<Integer, List<Ref>> ranks) {
    }

    /** Peers that hold nothing (a daemon on its own, or tests). */
    RehearsalPeers NONE = new RehearsalPeers() {
        @Override
        public CompletableFuture<Counts> counts(String peer, String job) {
            return CompletableFuture.completedFuture(new Counts("", null, Map.of()));
        }

        @Override
        public CompletableFuture<Counts> hold(String peer, String job) {
            return counts(peer, job);
        }

        @Override
        public CompletableFuture<List<Sample>> fetch(String peer, String job, List<Slot> slots) {
            return CompletableFuture.completedFuture(List.of());
        }

        @Override
        public CompletableFuture<Void> prepare(String peer, String job, Moves moves) {
            return CompletableFuture.failedFuture(new IllegalStateException("no peers"));
        }

        @Override
        public CompletableFuture<Void> finish(String peer, String job, boolean commit) {
            return CompletableFuture.completedFuture(null);
        }
    };

    /** What {@code peer} holds of {@code job}; an empty map (any id) when it has no buffer of the job. */
    CompletableFuture<Counts> counts(String peer, String job);

    /**
     * A re-partition's first step on {@code peer}: hold the job's updates off until its commit or abort, and
     * answer what it holds (as {@link #counts}).
     */
    CompletableFuture<Counts> hold(String peer, String job);

    /** The representatives in {@code slots} on {@code peer}, in order (one answer per slot it still holds). */
    CompletableFuture<List<Sample>> fetch(String peer, String job, List<Slot> slots);

    /** Phase one of a re-partition on {@code peer}: gather its new ranks' representatives, aside. */
    CompletableFuture<Void> prepare(String peer, String job, Moves moves);

    /** Phase two: switch to the gathered ranks ({@code commit}), or forget them. */
    CompletableFuture<Void> finish(String peer, String job, boolean commit);
}
