package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.RankLayout;
import io.tenplex.transform.Plan;
import io.tenplex.transform.ShardPlan;
import io.tenplex.transform.ValueCopy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * What a rank saved that the model neither places nor lists as a value (a training loop's scheduler,
 * step, epoch, RNG state, the type records of its directories): a reconfiguration never drops it.
 *
 * <p>When T and P stay, each new rank copies it whole, per data-parallel rank: from the old rank with
 * its tensor, pipeline and data-parallel coordinates, else data-parallel index 0 of that position,
 * else rank 0 (as {@link io.tenplex.ptc.ValueSpec.Scope#PER_DATA_RANK}). When T or P changes, the
 * positions do not map one to one, so each such path is a replicated value: every new rank gets every
 * path any old rank saved, from the first old rank (in rank order) with its data-parallel index that
 * saved it, else with index 0, else the first that saved it. {@link CarriedValues} checks first that
 * the old ranks of one data-parallel index that saved a path saved the same bytes. A path the new rank
 * gets anyway (a shard or a declared value) is not copied twice.
 */
final class UndeclaredValues {
    private UndeclaredValues() {
    }

    static List<ValueCopy> of(Plan plan, Map<Integer, CheckpointLayout> sources, Function<ShardPlan, String> destPath,
            List<ValueCopy> declared) {
        Set<String> placed = placed(plan);
        Set<String> declaredKeys = declaredKeys(plan);
        Set<String> undeclared = new HashSet<>();
        for (CheckpointLayout l : distinct(sources)) {
            undeclared.addAll(l.undeclaredPaths(placed, declaredKeys));
        }
        // only whether a new rank gets an undeclared path anyway is asked: a set of every shard's path
        // per rank would hold millions of entries on thousands of devices
        Map<Integer, Set<String>> taken = new HashMap<>();
        for (ShardPlan s : plan.shards()) {
            String path = undeclared.isEmpty() ? null : destPath.apply(s);
            if (path != null && undeclared.contains(path)) {
                taken.computeIfAbsent(s.destRank(), r -> new HashSet<>()).add(path);
            }
        }
        for (ValueCopy v : declared) {
            taken.computeIfAbsent(v.destRank(), r -> new HashSet<>()).add(v.key());
        }
        return positionsKept(plan) ? perPosition(plan, sources, taken) : replicated(plan, sources, taken);
    }

    /** The keys the plan's pieces read, and the old configuration's tensor keys (read by a piece or not, the model's). */
    private static Set<String> placed(Plan plan) {
        Set<String> placed = new HashSet<>(plan.sourceTensorKeys());
        if (!plan.isBound()) {
            return placed; // a planner's pieces read the old tensors' keys, every one of which is there
        }
        for (ShardPlan s : plan.shards()) {
            s.pieces().forEach(p -> placed.add(p.sourceKey()));
        }
        return placed;
    }

    private static Set<String> declaredKeys(Plan plan) {
        Set<String> declaredKeys = new HashSet<>();
        plan.values().forEach(v -> declaredKeys.add(v.key()));
        return declaredKeys;
    }

    /** The layouts of {@code sources}, each once (ranks that saved the same tree share one). */
    private static java.util.Collection<CheckpointLayout> distinct(Map<Integer, CheckpointLayout> sources) {
        Set<CheckpointLayout> out = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        out.addAll(sources.values());
        return out;
    }

    /** Whether every old position (tensor and pipeline coordinates) is a new one: T and P are unchanged. */
    static boolean positionsKept(Plan plan) {
        return plan.from().tp() == plan.to().tp() && plan.from().pp() == plan.to().pp();
    }

    /**
     * Per undeclared path, per data-parallel index of the old configuration, the old ranks that saved
     * it (in rank order).
     */
    static Map<String, Map<Integer, List<Integer>>> savers(Plan plan, Map<Integer, CheckpointLayout> sources) {
        Set<String> placed = placed(plan);
        Set<String> declaredKeys = declaredKeys(plan);
        Map<CheckpointLayout, List<String>> paths = new java.util.IdentityHashMap<>(); // once per distinct layout
        Map<String, Map<Integer, List<Integer>>> out = new LinkedHashMap<>();
        for (Map.Entry<Integer, CheckpointLayout> e : new TreeMap<>(sources).entrySet()) {
            int d = RankLayout.MEGATRON.coord(e.getKey(), plan.from()).dp();
            for (String path : paths.computeIfAbsent(e.getValue(), l -> l.undeclaredPaths(placed, declaredKeys))) {
                out.computeIfAbsent(path, p -> new TreeMap<>()).computeIfAbsent(d, x -> new ArrayList<>())
                        .add(e.getKey());
            }
        }
        return out;
    }

    private static List<ValueCopy> replicated(Plan plan, Map<Integer, CheckpointLayout> sources,
            Map<Integer, Set<String>> taken) {
        Map<String, Map<Integer, List<Integer>>> savers = savers(plan, sources);
        List<ValueCopy> out = new ArrayList<>();
        ParallelConfig to = plan.to();
        for (int rank = 0; rank < to.worldSize(); rank++) {
            int dp = RankLayout.MEGATRON.coord(rank, to).dp();
            Set<String> have = taken.getOrDefault(rank, Set.of());
            for (Map.Entry<String, Map<Integer, List<Integer>>> e : savers.entrySet()) {
                if (have.contains(e.getKey())) {
                    continue;
                }
                Map<Integer, List<Integer>> byIndex = e.getValue();
                List<Integer> from = byIndex.containsKey(dp) ? byIndex.get(dp) : byIndex.containsKey(0) ? byIndex.get(0)
                        : byIndex.values().iterator().next();
                int src = from.get(0);
                out.add(new ValueCopy(rank, e.getKey(), src, plan.sourceDevice(src)));
            }
        }
        return out;
    }

    private static List<ValueCopy> perPosition(Plan plan, Map<Integer, CheckpointLayout> sources,
            Map<Integer, Set<String>> taken) {
        Set<String> placed = placed(plan);
        Set<String> declaredKeys = declaredKeys(plan);
        List<ValueCopy> out = new ArrayList<>();
        ParallelConfig to = plan.to();
        for (int rank = 0; rank < to.worldSize(); rank++) {
            int src = source(plan.from(), RankLayout.MEGATRON.coord(rank, to), sources);
            CheckpointLayout l = sources.get(src);
            if (l == null) {
                continue;
            }
            Set<String> have = taken.getOrDefault(rank, Set.of());
            for (String path : l.undeclaredPaths(placed, declaredKeys)) {
                if (!have.contains(path)) {
                    out.add(new ValueCopy(rank, path, src, plan.sourceDevice(src)));
                }
            }
        }
        return out;
    }

    /** The old rank a new rank at {@code c} copies from, among those that saved something. */
    private static int source(ParallelConfig from, RankLayout.Coord c, Map<Integer, CheckpointLayout> sources) {
        if (c.tp() < from.tp() && c.pp() < from.pp()) {
            int same = RankLayout.MEGATRON.rank(new RankLayout.Coord(c.tp(), c.dp() < from.dp() ? c.dp() : 0, c.pp()),
                    from);
            if (sources.containsKey(same)) {
                return same;
            }
            int first = RankLayout.MEGATRON.rank(new RankLayout.Coord(c.tp(), 0, c.pp()), from);
            if (sources.containsKey(first)) {
                return first;
            }
        }
        return 0;
    }
}
