package io.tenplex.datasets.rehearsal;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** Daemons in one process: each address names a {@link RehearsalService}; calls run on the caller's thread. */
final class FakeRehearsalPeers implements RehearsalPeers {
    final Map<String, RehearsalService> daemons = new LinkedHashMap<>();

    /** A service at {@code address} whose peers are every daemon added (itself included). */
    RehearsalService add(String address) {
        RehearsalService s = new RehearsalService(this, 1 << 30);
        s.setSelfAddress(address);
        s.setPeers(() -> List.copyOf(daemons.keySet()));
        daemons.put(address, s);
        return s;
    }

    @Override
    public CompletableFuture<Counts> counts(String peer, String job) {
        return call(() -> daemons.get(peer).counts(job));
    }

    @Override
    public CompletableFuture<Counts> hold(String peer, String job) {
        return call(() -> daemons.get(peer).hold(job));
    }

    @Override
    public CompletableFuture<List<Sample>> fetch(String peer, String job, List<Slot> slots) {
        return call(() -> daemons.get(peer).read(job, slots));
    }

    @Override
    public CompletableFuture<Void> prepare(String peer, String job, Moves moves) {
        return call(() -> {
            daemons.get(peer).prepare(job, moves);
            return null;
        });
    }

    @Override
    public CompletableFuture<Void> finish(String peer, String job, boolean commit) {
        return call(() -> {
            daemons.get(peer).finish(job, commit);
            return null;
        });
    }

    private static <T> CompletableFuture<T> call(java.util.concurrent.Callable<T> c) {
        try {
            return CompletableFuture.completedFuture(c.call());
        } catch (Exception e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
