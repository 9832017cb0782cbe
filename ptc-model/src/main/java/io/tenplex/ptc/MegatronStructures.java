package io.tenplex.ptc;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The paper's second way to describe a model: the per-device checkpoint structures a parallelizer
 * (here Megatron-LM) produced under a known configuration, with every tensor replaced by
 * {@code {"tensor": [shape]}}. From them the global tensors and their partitioning are inferred:
 * which dimension is split follows Megatron's naming rules, the global size is the shard size times
 * T, the vocabulary is unpadded to the given size, and attention query groups are read off the
 * {@code query_key_value} rows. Optimizer state stored by position is keyed by parameter name
 * (Megatron's two parameter groups: matrices, then vectors, each in model order).
 */
public final class MegatronStructures {
    private MegatronStructures() {
    }

    /**
     * The shapes in one rank's structure: model tensors by name, optimizer moments and fp32 master
     * copies as {@code optimizer.exp_avg.<param>}, {@code optimizer.exp_avg_sq.<param>},
     * {@code optimizer.fp32_param.<param>}.
     */
    public static Map<String, Shape> shardShapes(JsonNode structure) {
        Map<String, Shape> out = new LinkedHashMap<>();
        walk(structure.path("model"), "", out);
        List<String> decay = new ArrayList<>();
        List<String> noDecay = new ArrayList<>();
        for (String p : parameterOrder(out.keySet())) {
            (out.get(p).rank() >= 2 ? decay : noDecay).add(p);
        }
        List<String> byPosition = new ArrayList<>(decay);
        byPosition.addAll(noDecay);
        Map<String, Shape> params = new LinkedHashMap<>(out);
        JsonNode opt = structure.path("optimizer");
        // fp16 and bf16: the mixed-precision optimizer wraps the torch optimizer's state dict under
        // "optimizer" and keeps fp32 master copies; fp32: the torch optimizer's state dict itself
        JsonNode state = (opt.has("optimizer") ? opt.path("optimizer") : opt).path("state");
        for (Iterator<String> it = state.fieldNames(); it.hasNext(); ) {
            String pos = it.next();
            String param = param(byPosition, Integer.parseInt(pos), params);
            for (String kind : new String[] {"exp_avg", "exp_avg_sq"}) {
                JsonNode t = state.path(pos).path(kind).path("tensor");
                if (!t.isMissingNode()) {
                    out.put("optimizer." + kind + "." + param, checked(shape(t), params.get(param), param));
                }
            }
        }
        JsonNode fp32 = opt.path("fp32_from_fp16_params");
        List<List<String>> groups = List.of(decay, noDecay);
        for (int g = 0; g < fp32.size() && g < 2; g++) {
            for (int j = 0; j < fp32.get(g).size(); j++) {
                String param = groups.get(g).get(j);
                out.put("optimizer.fp32_param." + param, checked(shape(fp32.get(g).get(j).path("tensor")),
                        params.get(param), param));
            }
        }
        return out;
    }

    /**
     * Megatron's parameter order (the order of the optimizer's state) given the checkpoint's order
     * of the model tensors: they agree except for the last stage's tied head, which the checkpoint
     * saves after every other tensor but which the model registers right after the language model,
     * before BERT's {@code lm_head} and {@code binary_head}.
     */
    public static List<String> parameterOrder(java.util.Collection<String> checkpointOrder) {
        List<String> order = new ArrayList<>(checkpointOrder);
        if (!order.remove(MegatronLayout.TIED_HEAD)) {
            return order;
        }
        int at = 0;
        for (int i = 0; i < order.size(); i++) {
            if (order.get(i).startsWith("language_model.")) {
                at = i + 1;
            }
        }
        order.add(at, MegatronLayout.TIED_HEAD);
        return order;
    }

    private static String param(List<String> byPosition, int pos, Map<String, Shape> params) {
        if (pos >= byPosition.size()) {
            throw new IllegalArgumentException("optimizer state " + pos + " has no parameter (" + params.size()
                    + " parameters)");
        }
        return byPosition.get(pos);
    }

    private static Shape checked(Shape s, Shape param, String name) {
        if (!s.equals(param)) {
            throw new IllegalArgumentException("optimizer state of " + name + " has shape " + s + " but the parameter "
                    + param);
        }
        return s;
    }

    private static void walk(JsonNode n, String prefix, Map<String, Shape> out) {
        if (n.isObject() && n.size() == 1 && n.has("tensor")) {
            out.put(prefix, shape(n.get("tensor")));
            return;
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            walk(e.getValue(), prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey(), out);
        }
    }

    private static Shape shape(JsonNode dims) {
        long[] d = new long[dims.size()];
        for (int i = 0; i < d.length; i++) {
            d[i] = dims.get(i).asLong();
        }
        return Shape.of(d);
    }

    /**
     * Infers the model from the structures of the data-parallel-0 ranks of one configuration.
     *
     * @param byRank structure per global rank (at least tensor rank 0 of every stage)
     * @param heads attention heads (not recorded in the structures)
     * @param vocab the real vocabulary size (the structures hold it padded)
     */
    public static Model infer(Map<Integer, JsonNode> byRank, ParallelConfig config, RankLayout layout, int heads,
            int vocab, int divisibleBy, DType dtype) {
        List<TensorSpec> tensors = new ArrayList<>();
        Map<String, String> ties = new LinkedHashMap<>();
        int firstLayer = 0;
        for (int stage = 0; stage < config.pp(); stage++) {
            int rank = layout.rank(new RankLayout.Coord(0, 0, stage), config);
            JsonNode s = byRank.get(rank);
            if (s == null) {
                throw new IllegalArgumentException("no structure for rank " + rank + " (tensor rank 0 of stage " + stage + ")");
            }
            Map<String, Shape> shapes = shardShapes(s);
            TreeSet<Integer> layers = new TreeSet<>();
            shapes.keySet().forEach(k -> {
                int l = TensorSpec.layerIn(k);
                if (l >= 0) {
                    layers.add(l);
                }
            });
            for (Map.Entry<String, Shape> e : shapes.entrySet()) {
                String key = e.getKey();
                boolean opt = key.startsWith("optimizer.");
                String param = opt ? key.substring(key.indexOf('.', "optimizer.".length()) + 1) : key;
                int local = TensorSpec.layerIn(param);
                Placement at = local >= 0 ? Placement.layer(firstLayer + local) : stagePlacement(param, stage, config.pp());
                String name = local >= 0 ? key.replaceFirst("layers\\." + local + "\\.", "layers." + (firstLayer + local) + ".")
                        : key;
                Partition p = partitionOf(param, shapes.get(param), heads, divisibleBy, config.tp());
                tensors.add(new TensorSpec(name, opt ? DType.F32 : dtype, global(e.getValue(), p, vocab, config.tp(),
                        name), at, p));
                if (param.equals(MegatronLayout.TIED_HEAD)) {
                    ties.put(name, name.replace(MegatronLayout.TIED_HEAD, "language_model.embedding.word_embeddings.weight"));
                }
            }
            firstLayer += layers.isEmpty() ? 0 : layers.last() + 1;
        }
        List<ValueSpec> values = new ArrayList<>(List.of(new ValueSpec("iteration", ValueSpec.Scope.GLOBAL),
                new ValueSpec("args", ValueSpec.Scope.GLOBAL),
                new ValueSpec("checkpoint_version", ValueSpec.Scope.GLOBAL),
                new ValueSpec("opt_param_scheduler", ValueSpec.Scope.GLOBAL),
                new ValueSpec("optimizer.param_groups", ValueSpec.Scope.GLOBAL)));
        if (byRank.get(layout.rank(new RankLayout.Coord(0, 0, 0), config)).path("optimizer").has("grad_scaler")) {
            values.add(new ValueSpec("optimizer.grad_scaler", ValueSpec.Scope.GLOBAL)); // fp16 and bf16 only
        }
        values.add(new ValueSpec("rng_state", ValueSpec.Scope.PER_POSITION));
        return new Model(tensors, values, firstLayer, ties);
    }

    /**
     * The stage of a tensor outside the transformer layers: with P > 1 the stage it was saved on
     * (the first, or the last); with P = 1 Megatron's rule, the embeddings on the first stage and
     * everything else (final norm, pooler, heads, their optimizer state) on the last.
     */
    static Placement stagePlacement(String param, int stage, int stages) {
        if (stages == 1) {
            return param.startsWith("language_model.embedding.") ? Placement.first() : Placement.last();
        }
        if (stage != 0 && stage != stages - 1) {
            throw new IllegalArgumentException(param + " is saved on pipeline stage " + stage + " of " + stages
                    + ", but outside the transformer layers Megatron keeps tensors only on the first and last stage");
        }
        return stage == 0 ? Placement.first() : Placement.last();
    }

    /**
     * Megatron's partitioning by parameter name: vocabulary-parallel embeddings and heads,
     * column-parallel {@code query_key_value} (whole query groups) and {@code dense_h_to_4h}, row-parallel
     * {@code self_attention.dense} and {@code dense_4h_to_h} weights; everything else replicated.
     */
    public static Partition partitionOf(String param, Shape local, int heads, int divisibleBy, int tp) {
        if (param.endsWith("word_embeddings.weight") || param.equals(MegatronLayout.TIED_HEAD)
                || param.equals("lm_head.bias")) {
            return new Partition.VocabSplit(0, divisibleBy);
        }
        if (param.contains("query_key_value.")) {
            return new Partition.Split(0, qkvGranule(local.dim(0) * tp, heads, param));
        }
        if (param.contains("dense_h_to_4h.")) {
            return new Partition.Split(0, 1);
        }
        if ((param.contains("self_attention.dense.") || param.contains("dense_4h_to_h.")) && param.endsWith(".weight")) {
            return new Partition.Split(1, 1);
        }
        return new Partition.Replicated();
    }

    private static long qkvGranule(long rows, int heads, String param) {
        // rows = (heads + 2·groups)·headDim and a query group is (heads/groups + 2)·headDim rows; with the
        // head dimension unknown, try the group counts that divide the heads
        for (int groups = heads; groups >= 1; groups--) {
            if (heads % groups == 0 && rows % (heads + 2L * groups) == 0) {
                long headDim = rows / (heads + 2L * groups);
                return (heads / groups + 2) * headDim;
            }
        }
        throw new IllegalArgumentException(param + ": " + rows + " rows do not fit " + heads + " heads");
    }

    private static Shape global(Shape local, Partition p, int vocab, int tp, String name) {
        int dim = Partition.splitDim(p);
        if (dim < 0) {
            return local;
        }
        long[] d = local.dims();
        d[dim] *= tp;
        if (p instanceof Partition.VocabSplit v) {
            if (v.padded(vocab, tp) != d[dim]) {
                throw new IllegalArgumentException(name + ": " + d[dim] + " rows is not vocabulary " + vocab
                        + " padded for T=" + tp + " (" + v.padded(vocab, tp) + ")");
            }
            d[dim] = vocab;
        }
        return Shape.of(d);
    }
}
