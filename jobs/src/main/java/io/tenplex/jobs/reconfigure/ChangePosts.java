package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.DaemonClient.ChangeAnswer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Posts a change's definition to every worker's daemon, which plans and starts its own part: a daemon
 * that lacks a description the change names (the model, a saved layout) is sent those and asked
 * again. At most {@link #IN_FLIGHT} daemons are asked at once, so hundreds of daemons are asked
 * concurrently with a bound.
 */
final class ChangePosts {
    /** Daemons asked at once. */
    static final int IN_FLIGHT = 64;

    private ChangePosts() {
    }

    /**
     * @param descriptions every description the change names, by digest
     * @return each worker's answer, in the order of {@code workers} (a failed post fails its own future)
     */
    static List<CompletableFuture<ChangeAnswer>> postAll(List<Integer> workers, ChangeSpec spec,
            Map<String, byte[]> descriptions, Map<Integer, InetSocketAddress> daemons, DaemonClient client) {
        List<CompletableFuture<ChangeAnswer>> sent = new ArrayList<>();
        ArrayDeque<CompletableFuture<ChangeAnswer>> window = new ArrayDeque<>();
        for (int w : workers) {
            if (window.size() == IN_FLIGHT) {
                window.poll().handle((x, e) -> null).join(); // its failure is collected by the caller
            }
            CompletableFuture<ChangeAnswer> a = post(w, spec, descriptions, daemons.get(w), client);
            sent.add(a);
            window.add(a);
        }
        return sent;
    }

    /** The answer of a daemon that started its part: with its status and plan digest. */
    private static ChangeAnswer started(int w, ChangeAnswer a) {
        if (a.status() == null || a.planDigest().isEmpty()) {
            throw new CompletionException(new IOException("worker " + w + " answered the change without starting its part"));
        }
        return a;
    }

    private static CompletableFuture<ChangeAnswer> post(int w, ChangeSpec spec, Map<String, byte[]> descriptions,
            InetSocketAddress daemon, DaemonClient client) {
        return client.postChange(daemon, w, spec).thenCompose(a -> {
            if (a.missing().isEmpty()) {
                return CompletableFuture.completedFuture(started(w, a));
            }
            List<CompletableFuture<Void>> puts = new ArrayList<>();
            for (String d : a.missing()) {
                byte[] bytes = descriptions.get(d);
                if (bytes == null) {
                    throw new CompletionException(new IOException("worker " + w + " asked for a description the change "
                            + "does not name: " + d));
                }
                puts.add(client.putDescription(daemon, spec.job(), d, bytes));
            }
            return CompletableFuture.allOf(puts.toArray(new CompletableFuture[0]))
                    .thenCompose(x -> client.postChange(daemon, w, spec)).thenApply(again -> {
                        if (!again.missing().isEmpty()) {
                            throw new CompletionException(new IOException("worker " + w + " still lacks "
                                    + again.missing().size() + " descriptions after they were sent (its budget for them "
                                    + "may be too small)"));
                        }
                        return started(w, again);
                    });
        });
    }
}
