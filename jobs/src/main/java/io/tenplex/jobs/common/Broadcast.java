package io.tenplex.jobs.common;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;

/** Tells every daemon of a cluster the same thing at once and collects who failed. */
public final class Broadcast {
    private Broadcast() {
    }

    /**
     * Calls {@code call} for every daemon at once.
     *
     * @return completes when all answered, with the failures as "worker W at host:port: reason"
     */
    public static CompletableFuture<List<String>> toAll(Map<Integer, InetSocketAddress> daemons,
            Function<InetSocketAddress, CompletableFuture<Void>> call) {
        List<CompletableFuture<String>> sent = new ArrayList<>();
        daemons.forEach((w, a) -> {
            CompletableFuture<Void> f;
            try {
                f = call.apply(a);
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            sent.add(f.handle((v, t) -> t == null ? null : failed("worker " + w + " at " + a + ": " + reason(t))));
        });
        return CompletableFuture.allOf(sent.toArray(new CompletableFuture[0])).thenApply(v ->
                sent.stream().map(CompletableFuture::join).filter(x -> x != null).toList());
    }

    /** The failures of {@link #toAll} from the daemons of {@code workers}. */
    public static List<String> ofWorkers(List<String> failed, java.util.Collection<Integer> workers) {
        return failed.stream().filter(f -> workers.stream().anyMatch(w -> f.startsWith("worker " + w + " at "))).toList();
    }

    private static String failed(String what) {
        org.slf4j.LoggerFactory.getLogger(Broadcast.class).warn("peer call failed: {}", what);
        return what;
    }

    private static String reason(Throwable t) {
        Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        return c.getMessage() != null ? c.getMessage() : c.toString();
    }
}
