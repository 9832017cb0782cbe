package io.tenplex.datasets.rehearsal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * How a job's rehearsal buffer is re-partitioned over a new set of data-parallel ranks: per class, the
 * representatives held by all old ranks are dealt out evenly over the new ranks (each gets the total
 * divided by the new rank count, the first ones one more), none duplicated; when the new ranks cannot
 * hold them all (fewer ranks times S), a uniformly random subset is kept. A new rank takes the
 * representatives its own daemon holds first, so that as few as possible cross the network. A pure
 * function of its arguments; the plan is a value.
 */
public final class Repartition {
    /** Per new rank, the representatives it takes (where they are held now), classes in order. */
    public record Plan(Map<Integer, List<GlobalSampler.Pick>> ranks) {
        /** Representatives that move to another daemon. */
        public long moved(Map<Integer, Integer> targets) {
            return ranks.entrySet().stream().mapToLong(e -> e.getValue().stream()
                    .filter(p -> p.source() != targets.get(e.getKey())).count()).sum();
        }
    }

    private Repartition() {
    }

    /**
     * @param holdings every old rank's counts per class, and the daemon (source) holding it
     * @param targets new rank to the daemon (source index) that will hold it
     * @param perClass S, the most representatives of a class one rank holds
     */
    public static Plan plan(List<GlobalSampler.Holding> holdings, Map<Integer, Integer> targets, int perClass,
            Random random) {
        if (targets.isEmpty()) {
            throw new IllegalArgumentException("a re-partition needs at least one new rank");
        }
        int classes = holdings.stream().mapToInt(h -> h.counts().length).max().orElse(0);
        Map<Integer, List<GlobalSampler.Pick>> out = new TreeMap<>();
        targets.keySet().forEach(m -> out.put(m, new ArrayList<>()));
        for (int cls = 0; cls < classes; cls++) {
            deal(kept(holdings, cls, (long) perClass * targets.size(), random), new TreeMap<>(targets), out);
        }
        return new Plan(out);
    }

    /** Every representative of class {@code cls}, a random subset of {@code room} when there are more. */
    private static List<GlobalSampler.Pick> kept(List<GlobalSampler.Holding> holdings, int cls, long room,
            Random random) {
        List<GlobalSampler.Pick> all = new ArrayList<>();
        for (GlobalSampler.Holding h : holdings) {
            for (int s = 0; cls < h.counts().length && s < h.counts()[cls]; s++) {
                all.add(new GlobalSampler.Pick(h.source(), h.rank(), cls, s));
            }
        }
        if (all.size() <= room) {
            return all;
        }
        Collections.shuffle(all, random);
        return new ArrayList<>(all.subList(0, (int) room));
    }

    /** Deals {@code kept} over the new ranks in even shares, each taking from its own daemon first. */
    private static void deal(List<GlobalSampler.Pick> kept, Map<Integer, Integer> targets,
            Map<Integer, List<GlobalSampler.Pick>> out) {
        Map<Integer, Deque<GlobalSampler.Pick>> bySource = new HashMap<>();
        for (GlobalSampler.Pick p : kept) {
            bySource.computeIfAbsent(p.source(), s -> new ArrayDeque<>()).add(p);
        }
        int n = targets.size();
        Map<Integer, Integer> need = new TreeMap<>();
        int i = 0;
        for (int m : targets.keySet()) {
            need.put(m, kept.size() / n + (i++ < kept.size() % n ? 1 : 0));
        }
        for (var t : targets.entrySet()) { // local first
            Deque<GlobalSampler.Pick> own = bySource.getOrDefault(t.getValue(), new ArrayDeque<>());
            while (need.get(t.getKey()) > 0 && !own.isEmpty()) {
                out.get(t.getKey()).add(own.poll());
                need.merge(t.getKey(), -1, Integer::sum);
            }
        }
        Deque<GlobalSampler.Pick> rest = new ArrayDeque<>();
        bySource.values().forEach(rest::addAll);
        for (int m : targets.keySet()) {
            for (int k = need.get(m); k > 0; k--) {
                out.get(m).add(rest.poll());
            }
        }
    }
}
