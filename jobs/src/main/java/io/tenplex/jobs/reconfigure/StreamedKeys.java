package io.tenplex.jobs.reconfigure;

import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * What a part knows of one rank being rebuilt from parity: the tensors already streamed (solved,
 * checked and put where they are read early) and whether the whole rank is published. Per tensor a
 * future completes with true once it is streamed (read it from the streamed tree), false once the
 * rank is published without it having been streamed (read it from the rank's tree), exceptionally
 * when the rank fails first. A tensor once streamed stays readable there: a later failure of the
 * rank does not take it back.
 */
final class StreamedKeys {
    private final CompletableFuture<Void> whole = new CompletableFuture<>();
    private final Set<String> streamed = new HashSet<>();
    private final Map<String, CompletableFuture<Boolean>> keys = new HashMap<>();

    /** Completes once the whole rank is published (exceptionally when it never will be). */
    CompletableFuture<Void> whole() {
        return whole;
    }

    /** When {@code key} can be read, and whether from the streamed tree. */
    synchronized CompletableFuture<Boolean> key(String key) {
        CompletableFuture<Boolean> f = keys.get(key);
        if (f != null) {
            return f;
        }
        f = new CompletableFuture<>();
        if (streamed.contains(key)) {
            f.complete(true);
        } else if (whole.isDone()) {
            CompletableFuture<Boolean> out = f;
            whole.whenComplete((v, t) -> {
                if (t == null) {
                    out.complete(false);
                } else {
                    out.completeExceptionally(t);
                }
            });
        }
        keys.put(key, f);
        return f;
    }

    /** These keys are streamed (a list read from the rebuilding daemon; keys seen before are ignored). */
    synchronized void streamed(Collection<String> now) {
        for (String k : now) {
            if (streamed.add(k)) {
                CompletableFuture<Boolean> f = keys.get(k);
                if (f != null) {
                    f.complete(true);
                }
            }
        }
    }

    /** The whole rank is published: every tensor not streamed is read from the rank's tree. */
    synchronized void published() {
        whole.complete(null);
        keys.values().forEach(f -> f.complete(false));
    }

    /** The rank will never be published (or the part stopped waiting): wakes every wait not over. */
    synchronized void failed(Throwable why) {
        whole.completeExceptionally(why);
        keys.values().forEach(f -> f.completeExceptionally(why));
    }
}
