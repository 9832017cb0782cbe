package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.ShardPlan;
import io.tenplex.transform.ValueCopy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Binds a plan's keys to the paths of the job's saved layout (see {@link CheckpointLayout}): where
 * each piece is read, where each new shard goes (in the layout the job saved, so training loads it
 * as it saved it), which files make up each value, and the small files the new layout needs
 * (Megatron's list markers and parameter positions, which depend on the new rank's parameters).
 */
public final class PlanPaths {
    private PlanPaths() {
    }

    /** The bound plan, and per destination rank the generated files (path to content). */
    public record Result(Plan plan, Map<Integer, Map<String, String>> generated) {}

    /** @param listed the layout of each old rank that saved something (a rank that saved nothing is absent) */
    public static Result bind(Plan plan, Map<Integer, CheckpointLayout> listed) {
        return bind(plan, listed, false);
    }

    /**
     * As {@link #bind(Plan, Map)}; with {@code keep}, the bound shards are kept (a plan of one daemon's
     * part: its shards are read once more to make the part, and not bound twice).
     */
    public static Result bind(Plan plan, Map<Integer, CheckpointLayout> listed, boolean keep) {
        CheckpointLayout[] sources = byRank(listed); // read for every replica of every piece: no boxing, no tree
        boolean megatron = listed.values().stream().anyMatch(CheckpointLayout::megatronOptimizer);
        boolean fp32 = megatron && listed.values().stream().filter(CheckpointLayout::megatronOptimizer)
                .allMatch(CheckpointLayout::fp32Optimizer);
        Map<Integer, List<List<String>>> groups = megatron ? groups(plan) : Map.of();
        java.util.function.Function<ShardPlan, String> destPath = s -> {
            if (megatron && s.key().startsWith("optimizer.") && !s.key().startsWith("optimizer.grad_scaler.")) {
                return CheckpointLayout.megatronOptimizerPath(s.key(), groups.getOrDefault(s.destRank(),
                        List.of(List.of(), List.of())), fp32);
            }
            for (Piece p : s.pieces()) {
                String at = sourcePath(sources, p.sourceRank(), p.sourceKey());
                for (int r : p.replicas()) {
                    at = at != null ? at : sourcePath(sources, r, p.sourceKey());
                }
                if (at != null) {
                    return CheckpointLayout.destPath(at, p.sourceKey(), s.key());
                }
            }
            for (int r : listed.keySet()) { // an empty tensor has no pieces: the path of its key where saved
                String at = sourcePath(sources, r, s.key());
                if (at != null) {
                    return at;
                }
            }
            return s.key();
        };
        List<ValueCopy> values = values(plan, listed);
        values.addAll(UndeclaredValues.of(plan, listed, destPath, values));
        Plan bound = plan.withPaths(sameTreeOnce(sources), destPath, values, keep);
        Map<Integer, Map<String, String>> generated = new TreeMap<>();
        if (megatron) {
            Map<List<List<String>>, Map<String, String>> files = new java.util.IdentityHashMap<>(); // shared groups, shared files
            groups.forEach((r, g) -> generated.put(r, files.computeIfAbsent(g, x -> CheckpointLayout.megatronGenerated(x,
                    fp32))));
        }
        return new Result(bound, generated);
    }

    /**
     * Megatron's parameter groups of every new rank; ranks with the same parameters (every rank of a
     * stage, as a rule) share one list.
     */
    private static Map<Integer, List<List<String>>> groups(Plan plan) {
        Map<Integer, List<String>> params = new TreeMap<>();
        Map<String, Integer> dims = new HashMap<>();
        for (ShardPlan s : plan.shards()) {
            if (!s.key().startsWith("optimizer.")) {
                params.computeIfAbsent(s.destRank(), r -> new ArrayList<>()).add(s.key());
                dims.put(s.key(), s.shape().rank());
            }
        }
        Map<List<String>, List<List<String>>> distinct = new HashMap<>();
        Map<Integer, List<List<String>>> groups = new HashMap<>();
        params.forEach((r, p) -> groups.put(r, distinct.computeIfAbsent(p, x -> CheckpointLayout.groups(x, dims))));
        return groups;
    }

    /** One lookup of a key in a saved tree, remembered. */
    private record Looked(CheckpointLayout layout, String key, String path) {}

    /**
     * A source rank's stored path of a key, looked up once for consecutive ranks that share one saved
     * tree (a piece's replicas, as a rule: at thousands of data-parallel ranks, thousands of lookups of
     * the same answer). Safe for binding from several threads.
     */
    private static java.util.function.BiFunction<Integer, String, String> sameTreeOnce(CheckpointLayout[] sources) {
        java.util.concurrent.atomic.AtomicReference<Looked> last = new java.util.concurrent.atomic.AtomicReference<>();
        return (rank, key) -> {
            CheckpointLayout l = rank >= 0 && rank < sources.length ? sources[rank] : null;
            if (l == null) {
                return null;
            }
            Looked seen = last.get();
            if (seen != null && seen.layout() == l && seen.key().equals(key)) {
                return seen.path();
            }
            String path = l.storedTensor(key);
            last.set(new Looked(l, key, path));
            return path;
        };
    }

    private static CheckpointLayout[] byRank(Map<Integer, CheckpointLayout> listed) {
        int n = listed.keySet().stream().mapToInt(Integer::intValue).max().orElse(-1) + 1;
        CheckpointLayout[] out = new CheckpointLayout[n];
        listed.forEach((r, l) -> {
            if (r >= 0) {
                out[r] = l;
            }
        });
        return out;
    }

    private static String sourcePath(CheckpointLayout[] sources, int rank, String key) {
        CheckpointLayout l = rank >= 0 && rank < sources.length ? sources[rank] : null;
        return l == null ? null : l.storedTensor(key);
    }

    private static List<ValueCopy> values(Plan plan, Map<Integer, CheckpointLayout> sources) {
        List<ValueCopy> out = new ArrayList<>();
        Map<CheckpointLayout, Map<String, List<String>>> known = new java.util.IdentityHashMap<>(); // shared layouts
        for (ValueCopy v : plan.values()) {
            CheckpointLayout l = sources.get(v.sourceRank());
            if (l == null) {
                throw new IllegalArgumentException("rank " + v.sourceRank() + " saved nothing, but rank " + v.destRank()
                        + " needs its value '" + v.key() + "'");
            }
            Map<String, List<String>> paths = known.computeIfAbsent(l, x -> new HashMap<>());
            List<String> at = paths.get(v.key());
            if (at == null) {
                at = l.valuePaths(v.key(), v.sourceRank()); // throws naming the rank when it saved no such value
                paths.put(v.key(), at);
            }
            for (String path : at) {
                out.add(new ValueCopy(v.destRank(), path, v.sourceRank(), v.sourceDevice()));
            }
        }
        return out;
    }
}
