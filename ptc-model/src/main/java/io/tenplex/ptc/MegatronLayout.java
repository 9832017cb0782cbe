package io.tenplex.ptc;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Megatron-LM's GPT and BERT state as tensor specs: column-parallel weights split along dim 0,
 * row-parallel weights along dim 1, layer norms and row-parallel biases replicated, the vocabulary
 * padded to a multiple of {@code divisibleBy}·T and split, embeddings on the first stage, final norm
 * and heads on the last (with the tied {@code word_embeddings_for_head} copy when P > 1), and
 * {@code query_key_value} split so that whole attention heads (whole query groups with grouped-query
 * attention) stay on one tensor rank. Optionally the Adam state: {@code exp_avg}, {@code exp_avg_sq}
 * and, for fp16 and bf16 weights, fp32 master copies ({@code fp32_param}; fp32 training has none),
 * keyed by parameter name, partitioned like their parameter.
 */
public final class MegatronLayout {
    private MegatronLayout() {
    }

    /** The shape of a transformer. {@code kvGroups == heads} is ordinary multi-head attention. */
    public record Shape(int layers, int hidden, int heads, int kvGroups, int ffn, int vocab, int seqLength,
            int divisibleBy, DType dtype, boolean bert, boolean adam) {
        public Shape {
            if (hidden % heads != 0 || heads % kvGroups != 0) {
                throw new IllegalArgumentException("hidden " + hidden + " must be a multiple of heads " + heads
                        + ", and heads a multiple of query groups " + kvGroups);
            }
        }

        /** GPT with multi-head attention, ffn = 4·hidden, divisible_by 128, fp16 weights and Adam state. */
        public static Shape gpt(int layers, int hidden, int heads, int vocab, int seqLength) {
            return new Shape(layers, hidden, heads, heads, 4 * hidden, vocab, seqLength, 128, DType.F16, false, true);
        }
    }

    private static final String PREFIX = "language_model.";
    /** The last stage's tied copy of the word embeddings (present when P > 1). */
    public static final String TIED_HEAD = "word_embeddings_for_head.weight";

    /** The model's tensors and values. */
    public static Model model(Shape m) {
        List<TensorSpec> params = new ArrayList<>();
        int h = m.hidden();
        Partition vocab = new Partition.VocabSplit(0, m.divisibleBy());
        Partition rep = new Partition.Replicated();
        params.add(spec(PREFIX + "embedding.word_embeddings.weight", m, Placement.first(), vocab, m.vocab(), h));
        params.add(spec(PREFIX + "embedding.position_embeddings.weight", m, Placement.first(), rep, m.seqLength(), h));
        if (m.bert()) {
            params.add(spec(PREFIX + "embedding.tokentype_embeddings.weight", m, Placement.first(), rep, 2, h));
        }
        for (int l = 0; l < m.layers(); l++) {
            layer(params, m, l);
        }
        params.add(spec(PREFIX + "encoder.final_layernorm.weight", m, Placement.last(), rep, h));
        params.add(spec(PREFIX + "encoder.final_layernorm.bias", m, Placement.last(), rep, h));
        if (m.bert()) {
            bertHeads(params, m, vocab);
        }
        List<TensorSpec> all = new ArrayList<>(params);
        if (m.adam()) {
            for (TensorSpec p : params) {
                for (String kind : optimizerKinds(m.dtype())) {
                    all.add(new TensorSpec("optimizer." + kind + "." + p.name(), DType.F32, p.shape(), p.placement(),
                            p.partition()));
                }
            }
        }
        List<ValueSpec> values = List.of(new ValueSpec("iteration", ValueSpec.Scope.GLOBAL),
                new ValueSpec("args", ValueSpec.Scope.GLOBAL),
                new ValueSpec("optimizer.param_groups", ValueSpec.Scope.GLOBAL),
                new ValueSpec("lr_scheduler", ValueSpec.Scope.GLOBAL),
                new ValueSpec("rng_state", ValueSpec.Scope.PER_POSITION));
        return new Model(all, values, m.layers());
    }

    /** The tensors of transformer layer {@code l}. */
    private static void layer(List<TensorSpec> params, Shape m, int l) {
        int h = m.hidden();
        int headDim = h / m.heads();
        Partition col = new Partition.Split(0, 1);
        Partition row = new Partition.Split(1, 1);
        Partition rep = new Partition.Replicated();
        long qkvRows = (long) (m.heads() + 2L * m.kvGroups()) * headDim;
        long granule = (long) (m.heads() / m.kvGroups() + 2) * headDim; // one query group with its k and v
        Partition qkv = new Partition.Split(0, granule);
        String p = PREFIX + "encoder.layers." + l + ".";
        Placement at = Placement.layer(l);
        params.add(spec(p + "input_layernorm.weight", m, at, rep, h));
        params.add(spec(p + "input_layernorm.bias", m, at, rep, h));
        params.add(spec(p + "self_attention.query_key_value.weight", m, at, qkv, qkvRows, h));
        params.add(spec(p + "self_attention.query_key_value.bias", m, at, qkv, qkvRows));
        params.add(spec(p + "self_attention.dense.weight", m, at, row, h, h));
        params.add(spec(p + "self_attention.dense.bias", m, at, rep, h));
        params.add(spec(p + "post_attention_layernorm.weight", m, at, rep, h));
        params.add(spec(p + "post_attention_layernorm.bias", m, at, rep, h));
        params.add(spec(p + "mlp.dense_h_to_4h.weight", m, at, col, m.ffn(), h));
        params.add(spec(p + "mlp.dense_h_to_4h.bias", m, at, col, m.ffn()));
        params.add(spec(p + "mlp.dense_4h_to_h.weight", m, at, row, h, m.ffn()));
        params.add(spec(p + "mlp.dense_4h_to_h.bias", m, at, rep, h));
    }

    /** BERT's pooler, language-model head and binary head (on the last stage). */
    private static void bertHeads(List<TensorSpec> params, Shape m, Partition vocab) {
        int h = m.hidden();
        Partition rep = new Partition.Replicated();
        params.add(spec(PREFIX + "pooler.dense.weight", m, Placement.last(), rep, h, h));
        params.add(spec(PREFIX + "pooler.dense.bias", m, Placement.last(), rep, h));
        params.add(spec("lm_head.dense.weight", m, Placement.last(), rep, h, h));
        params.add(spec("lm_head.dense.bias", m, Placement.last(), rep, h));
        params.add(spec("lm_head.layernorm.weight", m, Placement.last(), rep, h));
        params.add(spec("lm_head.layernorm.bias", m, Placement.last(), rep, h));
        params.add(spec("lm_head.bias", m, Placement.last(), vocab, m.vocab()));
        params.add(spec("binary_head.weight", m, Placement.last(), rep, 2, h));
        params.add(spec("binary_head.bias", m, Placement.last(), rep, 2));
    }

    /**
     * The Adam state Megatron keeps per parameter: both moments, and an fp32 master copy when the
     * weights are fp16 or bf16 (its mixed-precision optimizer); fp32 weights are their own master.
     */
    public static List<String> optimizerKinds(DType weights) {
        return weights == DType.F32 ? List.of("exp_avg", "exp_avg_sq") : List.of("exp_avg", "exp_avg_sq", "fp32_param");
    }

    /**
     * The model for a pipeline of {@code stages} stages: with more than one stage the last stage also
     * holds {@code word_embeddings_for_head.weight}, the tied copy of the word embeddings.
     */
    public static Model model(Shape m, int stages) {
        return forStages(model(m), stages);
    }

    /**
     * A Megatron model as a configuration with {@code stages} pipeline stages stores it: the tied head
     * ({@code word_embeddings_for_head.weight}, a copy of the word embeddings on the last stage, with
     * a copy of each of their optimizer tensors) is there exactly when P > 1. Adds it, or drops it, as
     * needed; a model without Megatron's word embeddings, or with an untied output layer
     * ({@code language_model.output_layer.weight}), is returned as it is.
     */
    public static Model forStages(Model model, int stages) {
        String emb = PREFIX + "embedding.word_embeddings.weight";
        boolean hasHead = model.has(TIED_HEAD);
        if (stages > 1 && !hasHead && model.has(emb) && !model.has(PREFIX + "output_layer.weight")) {
            return withHead(model, emb);
        }
        if (stages == 1 && hasHead) {
            List<TensorSpec> kept = new ArrayList<>();
            Map<String, String> ties = new LinkedHashMap<>();
            for (TensorSpec t : model.tensors()) {
                if (!t.name().endsWith(TIED_HEAD) || model.tiedTo(t.name()) == null) {
                    kept.add(t);
                    if (model.tiedTo(t.name()) != null) {
                        ties.put(t.name(), model.tiedTo(t.name()));
                    }
                }
            }
            return new Model(kept, model.values(), model.layers(), ties);
        }
        return model;
    }

    /**
     * The model to read a save of {@code stages} stages with: a Megatron save with P = 1 has no tied
     * head, so one in the description is dropped; a pipelined save is read as described (when the
     * description has no tied head, a target that needs one fills it from the word embeddings, its
     * original, see {@link Model#tiedTo}).
     */
    public static Model asSaved(Model model, int stages) {
        return stages == 1 ? forStages(model, 1) : model;
    }

    /** The model with the tied head, and a copy of each optimizer tensor of the embeddings, on the last stage. */
    private static Model withHead(Model model, String emb) {
        List<TensorSpec> all = new ArrayList<>(model.tensors());
        Map<String, String> ties = new LinkedHashMap<>();
        for (TensorSpec t : model.tensors()) {
            if (model.tiedTo(t.name()) != null) {
                ties.put(t.name(), model.tiedTo(t.name()));
            }
        }
        for (TensorSpec t : model.tensors()) {
            boolean state = t.name().startsWith("optimizer.") && t.name().endsWith("." + emb)
                    && t.name().indexOf('.', "optimizer.".length()) == t.name().length() - emb.length() - 1;
            if (t.name().equals(emb) || state) {
                String copy = t.name().substring(0, t.name().length() - emb.length()) + TIED_HEAD;
                all.add(new TensorSpec(copy, t.dtype(), t.shape(), Placement.last(), t.partition()));
                ties.put(copy, t.name());
            }
        }
        return new Model(all, model.values(), model.layers(), ties);
    }

    private static TensorSpec spec(String name, Shape m, Placement at, Partition p, long... dims) {
        return new TensorSpec(name, m.dtype(), io.tenplex.ptc.Shape.of(dims), at, p);
    }
}
