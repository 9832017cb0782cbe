package io.tenplex.ptc.describe;

import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Placement;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.ptc.ValueSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A {@link Model} inferred from the shards every rank saved under a known configuration, for any
 * tensor names (as {@link io.tenplex.ptc.MegatronStructures} does for Megatron's): the stages that
 * hold a tensor say where it lives (layers renumbered from 0 per stage; outside the layers, the first
 * or the last stage, which P > 1 reveals and a rule's {@code stage} gives under P = 1), the rules say
 * how it is cut, and the shard shape times T gives the global shape (a vocabulary dimension unpadded
 * to the rule's {@code size}). An optimizer moment {@code optimizer.<kind>.<param>} follows its
 * parameter. The result is checked against every saved shard; anything that does not fit (tensor
 * ranks that saved different things, a tensor on two stages, a stage nothing tells, a rule missing,
 * a size the partition cannot produce) is refused with the tensor, the ranks and the configuration.
 */
public final class ShardInference {
    private ShardInference() {
    }

    /** What one rank saved: tensors by key (in saved order) and the keys of its non-tensor values. */
    public record Saved(Map<String, TensorMeta> tensors, Set<String> values) {}

    /** The model of the shards {@code byRank} (every rank of data-parallel index 0, at least) saved under {@code config}. */
    public static Model infer(Map<Integer, Saved> byRank, ParallelConfig config, RankLayout layout,
            PartitionRules rules) {
        List<Map<String, TensorMeta>> stages = new ArrayList<>();
        for (int s = 0; s < config.pp(); s++) {
            stages.add(stage(byRank, s, config, layout));
        }
        int perStage = layersPerStage(stages, config);
        Map<String, TreeSet<Integer>> holders = new LinkedHashMap<>();
        for (int s = 0; s < stages.size(); s++) {
            for (String k : stages.get(s).keySet()) {
                if (TensorSpec.layerIn(k) < 0) {
                    holders.computeIfAbsent(k, x -> new TreeSet<>()).add(s);
                }
            }
        }
        List<TensorSpec> tensors = new ArrayList<>();
        Map<String, String> ties = new LinkedHashMap<>();
        for (int s = 0; s < stages.size(); s++) {
            Map<String, TensorMeta> shards = stages.get(s);
            for (Map.Entry<String, TensorMeta> e : shards.entrySet()) {
                String key = e.getKey();
                int local = TensorSpec.layerIn(key);
                if (local < 0 && holders.get(key).first() != s) {
                    continue; // refused below unless it is on one stage
                }
                Tensor t = new Tensor(key, local < 0 ? key : key.replaceFirst("layers\\." + local + "\\.",
                        "layers." + (s * perStage + local) + "."), s * perStage + local, e.getValue());
                tensors.add(t.spec(param(key, shards), shards, rules, holders.get(key), config, ties));
            }
        }
        Set<String> values = new TreeSet<>();
        byRank.values().forEach(v -> values.addAll(v.values()));
        Model m = new Model(tensors, values.stream().map(k -> new ValueSpec(k, ValueSpec.Scope.GLOBAL)).toList(),
                perStage * config.pp(), ties);
        verify(m, byRank, config, layout);
        return m;
    }

    /** The shards of one stage, equal over its tensor ranks (data-parallel index 0). */
    private static Map<String, TensorMeta> stage(Map<Integer, Saved> byRank, int s, ParallelConfig c, RankLayout l) {
        Map<String, TensorMeta> first = null;
        int firstRank = -1;
        for (int tp = 0; tp < c.tp(); tp++) {
            int rank = l.rank(new RankLayout.Coord(tp, 0, s), c);
            Saved saved = byRank.get(rank);
            if (saved == null) {
                throw new IllegalArgumentException("no shards of rank " + rank + " (tensor rank " + tp + " of stage " + s
                        + ") under " + c);
            }
            if (first == null) {
                first = saved.tensors();
                firstRank = rank;
                continue;
            }
            for (String k : union(first.keySet(), saved.tensors().keySet())) {
                TensorMeta a = first.get(k);
                TensorMeta b = saved.tensors().get(k);
                if (a == null || !a.equals(b)) {
                    throw new IllegalArgumentException(k + ": rank " + firstRank + " saved " + describe(a) + " but rank "
                            + rank + " (same stage " + s + ", tensor rank " + tp + ") saved " + describe(b) + " under "
                            + c + "; the tensor ranks of a stage must save the same tensors, equally cut");
                }
            }
        }
        return first;
    }

    private static Set<String> union(Set<String> a, Set<String> b) {
        Set<String> u = new TreeSet<>(a);
        u.addAll(b);
        return u;
    }

    private static String describe(TensorMeta m) {
        return m == null ? "nothing" : m.dtype().wireName() + m.shape();
    }

    private static int layersPerStage(List<Map<String, TensorMeta>> stages, ParallelConfig c) {
        int per = -1;
        for (int s = 0; s < stages.size(); s++) {
            int n = stages.get(s).keySet().stream().mapToInt(TensorSpec::layerIn).max().orElse(-1) + 1;
            if (per >= 0 && n != per) {
                throw new IllegalArgumentException("stage " + s + " saved " + n + " layers but stage 0 " + per + " under "
                        + c + "; only uniform stages can be inferred");
            }
            per = n;
        }
        return per;
    }

    /** The parameter an optimizer moment {@code optimizer.<kind>.<param>} belongs to, or the key itself. */
    private static String param(String key, Map<String, TensorMeta> shards) {
        if (key.startsWith("optimizer.")) {
            int dot = key.indexOf('.', "optimizer.".length());
            if (dot > 0 && shards.containsKey(key.substring(dot + 1))) {
                return key.substring(dot + 1);
            }
        }
        return key;
    }

    /** Every saved shard of data-parallel index 0 is what the inferred model predicts. */
    private static void verify(Model m, Map<Integer, Saved> byRank, ParallelConfig c, RankLayout l) {
        Ptc ptc = new Ptc(m, c, l, io.tenplex.ptc.StageMap.uniform(m.layers(), c.pp()),
                Ptc.packedDevices(c.worldSize(), c.worldSize()));
        for (Map.Entry<Integer, Saved> e : new TreeMap<>(byRank).entrySet()) {
            if (l.coord(e.getKey(), c).dp() != 0) {
                continue;
            }
            for (Ptc.Shard sh : ptc.shards(e.getKey())) {
                TensorMeta saved = e.getValue().tensors().get(sh.key());
                if (saved == null || !saved.shape().equals(sh.shape())) {
                    throw new IllegalArgumentException(sh.spec().name() + ": rank " + e.getKey() + " saved "
                            + describe(saved) + " but the description " + sh.spec().partition() + " of "
                            + sh.spec().shape() + " gives " + sh.shape() + " under " + c);
                }
            }
        }
    }

    /** One saved key of one stage, becoming a tensor of the model. */
    private record Tensor(String key, String name, int layer, TensorMeta meta) {
        TensorSpec spec(String param, Map<String, TensorMeta> shards, PartitionRules rules, Set<Integer> stages,
                ParallelConfig c, Map<String, String> ties) {
            PartitionRules.Match m = rules.match(param).orElseThrow(() -> new IllegalArgumentException(name + " "
                    + describe(meta) + " matches no rule (" + rules.size() + " rules); add one"));
            if (!param.equals(key) && !shards.get(param).shape().equals(meta.shape())) {
                throw new IllegalArgumentException(name + " has shape " + meta.shape() + " but its parameter " + param
                        + " " + shards.get(param).shape() + " under " + c);
            }
            if (m.tiedTo() != null) {
                ties.put(name, param.equals(key) ? m.tiedTo() : key.substring(0, key.length() - param.length())
                        + m.tiedTo());
            }
            Placement at = TensorSpec.layerIn(key) >= 0 ? Placement.layer(layer) : placement(stages, m, c);
            return new TensorSpec(name, meta.dtype(), global(m, c), at, m.partition());
        }

        private Placement placement(Set<Integer> stages, PartitionRules.Match m, ParallelConfig c) {
            Placement.Kind seen = null;
            if (c.pp() > 1) {
                if (stages.size() != 1 || (!stages.contains(0) && !stages.contains(c.pp() - 1))) {
                    throw new IllegalArgumentException(name + " is in no layers.<n>. but saved by stages " + stages
                            + " under " + c + "; it must be on the first or the last stage only");
                }
                seen = stages.contains(0) ? Placement.Kind.FIRST : Placement.Kind.LAST;
            }
            if (seen != null && m.stage() != null && seen != m.stage()) {
                throw new IllegalArgumentException(name + ": rule " + m.rule() + " puts it on the " + lower(m.stage())
                        + " stage but the " + lower(seen) + " stage saved it under " + c);
            }
            Placement.Kind k = seen != null ? seen : m.stage();
            if (k == null) {
                throw new IllegalArgumentException(name + " is in no layers.<n>. and was saved under " + c + ", which "
                        + "does not say whether it belongs to the first or the last stage; give \"stage\" in rule "
                        + m.rule());
            }
            return k == Placement.Kind.FIRST ? Placement.first() : Placement.last();
        }

        private static String lower(Placement.Kind k) {
            return k.name().toLowerCase(java.util.Locale.ROOT);
        }

        private Shape global(PartitionRules.Match m, ParallelConfig c) {
            Partition p = m.partition();
            int dim = Partition.splitDim(p);
            if (dim < 0) {
                return meta.shape();
            }
            if (dim >= meta.shape().rank()) {
                throw new IllegalArgumentException(name + ": rule " + m.rule() + " splits dim " + dim + " but the saved "
                        + "shard is " + meta.shape());
            }
            long[] d = meta.shape().dims();
            d[dim] *= c.tp();
            Partition inner = p instanceof Partition.Expert e ? e.inner() : p;
            if (inner instanceof Partition.VocabSplit v) {
                if (m.size() == null || v.padded(m.size(), c.tp()) != d[dim]) {
                    throw new IllegalArgumentException(name + ": " + d[dim] + " rows saved under " + c + " are "
                            + (m.size() == null ? "a padded vocabulary whose size the rule " + m.rule()
                                    + " does not give (\"size\")"
                                    : "not vocabulary " + m.size() + " padded for T=" + c.tp() + " ("
                                            + v.padded(m.size(), c.tp()) + ")"));
                }
                d[dim] = m.size();
            }
            return Shape.of(d);
        }
    }
}
