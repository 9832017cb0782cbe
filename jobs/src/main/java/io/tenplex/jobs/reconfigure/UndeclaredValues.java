package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.RankLayout;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.ShardPlan;
import io.tenplex.transform.ValueCopy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * What a rank saved that the model neither places nor lists as a value (a training loop's scheduler,
 * step, epoch, RNG state, the type records of its directories): a reconfiguration never drops it. Each
 * new rank copies it whole, per data-parallel rank: from the old rank with its tensor, pipeline and
 * data-parallel coordinates, else data-parallel index 0 of that position, else rank 0 (as
 * {@link io.tenplex.ptc.ValueSpec.Scope#PER_DATA_RANK}). A path the new rank gets anyway (a shard or a
 * declared value) is not copied twice.
 */
final class UndeclaredValues {
    private UndeclaredValues() {
    }

    static List<ValueCopy> of(Plan plan, Map<Integer, CheckpointLayout> sources, Function<ShardPlan, String> destPath,
            List<ValueCopy> declared) {
        Set<String> placed = new HashSet<>();
        Map<Integer, Set<String>> taken = new HashMap<>();
        for (ShardPlan s : plan.shards()) {
            s.pieces().stream().map(Piece::sourceKey).forEach(placed::add);
            taken.computeIfAbsent(s.destRank(), r -> new HashSet<>()).add(destPath.apply(s));
        }
        Set<String> declaredKeys = new HashSet<>();
        for (ValueCopy v : declared) {
            taken.computeIfAbsent(v.destRank(), r -> new HashSet<>()).add(v.key());
        }
        plan.values().forEach(v -> declaredKeys.add(v.key()));
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
