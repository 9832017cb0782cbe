package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import java.util.function.IntFunction;

/**
 * Posts the parts of a plan one worker at a time: each part is built (and, by the client, encoded)
 * only when it is its turn, and the next waits while the parts still being sent hold more than
 * {@link PlanHeap#IN_FLIGHT_PIECES} pieces, so the coordinator holds about one part at a time however
 * many workers there are and however slow their links.
 */
final class PartPosts {
    private PartPosts() {
    }

    /**
     * @param part builds worker {@code w}'s part
     * @param post sends a part to a worker's daemon
     * @return each worker's answer, in the order of {@code workers} (a failed post fails its own future)
     */
    static List<CompletableFuture<PartStatus>> postAll(List<Integer> workers, IntFunction<PlanPart> part,
            BiFunction<Integer, PlanPart, CompletableFuture<PartStatus>> post) {
        List<CompletableFuture<PartStatus>> sent = new ArrayList<>();
        ArrayDeque<long[]> window = new ArrayDeque<>(); // {index in sent, pieces}
        long inFlight = 0;
        try {
            for (int w : workers) {
                PlanPart p = part.apply(w);
                long pieces = pieces(p);
                while (!window.isEmpty() && inFlight + pieces > PlanHeap.IN_FLIGHT_PIECES) {
                    long[] oldest = window.poll();
                    sent.get((int) oldest[0]).handle((x, e) -> null).join(); // its failure is collected by the caller
                    inFlight -= oldest[1];
                }
                sent.add(post.apply(w, p));
                window.add(new long[] {sent.size() - 1, pieces});
                inFlight += pieces;
            }
        } catch (RuntimeException | Error e) {
            // the caller aborts every part next: a part still on its way would arrive after its abort and
            // prepare, so the posts already made land first
            sent.forEach(f -> f.handle((x, t) -> null).join());
            throw e;
        }
        return sent;
    }

    static long pieces(PlanPart p) {
        return p.shards().stream().mapToLong(s -> s.pieces().size()).sum();
    }
}
