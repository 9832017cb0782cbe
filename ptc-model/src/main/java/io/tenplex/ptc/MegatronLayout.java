package io.tenplex.ptc;

import java.util.ArrayList;
import java.util.List;

/**
 * Megatron-LM's GPT and BERT state as tensor specs: column-parallel weights split along dim 0,
 * row-parallel weights along dim 1, layer norms and row-parallel biases replicated, the vocabulary
 * padded to a multiple of {@code divisibleBy}·T and split, embeddings on the first stage, final norm
 * and heads on the last (with the tied {@code word_embeddings_for_head} copy when P > 1), and
 * {@code query_key_value} split so that whole attention heads (whole query groups with grouped-query
 * attention) stay on one tensor rank. Optionally the Adam state: {@code exp_avg}, {@code exp_avg_sq}
 * and fp32 master copies, keyed by parameter name, partitioned like their parameter.
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
                for (String kind : new String[] {"exp_avg", "exp_avg_sq", "fp32_param"}) {
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
     * The model for a pipeline of {@code stages} stages: with more than one stage the last stage also
     * holds {@code word_embeddings_for_head.weight}, the tied copy of the word embeddings.
     */
    public static Model model(Shape m, int stages) {
        Model base = model(m);
        if (stages == 1) {
            return base;
        }
        List<TensorSpec> all = new ArrayList<>(base.tensors());
        TensorSpec emb = base.tensor(PREFIX + "embedding.word_embeddings.weight");
        all.add(new TensorSpec(TIED_HEAD, emb.dtype(), emb.shape(), Placement.last(), emb.partition()));
        java.util.Map<String, String> ties = new java.util.LinkedHashMap<>();
        ties.put(TIED_HEAD, emb.name());
        if (m.adam()) {
            for (String kind : new String[] {"exp_avg", "exp_avg_sq", "fp32_param"}) {
                String copy = "optimizer." + kind + "." + TIED_HEAD;
                all.add(new TensorSpec(copy, DType.F32, emb.shape(), Placement.last(), emb.partition()));
                ties.put(copy, "optimizer." + kind + "." + emb.name());
            }
        }
        return new Model(all, base.values(), base.layers(), ties);
    }

    private static TensorSpec spec(String name, Shape m, Placement at, Partition p, long... dims) {
        return new TensorSpec(name, m.dtype(), io.tenplex.ptc.Shape.of(dims), at, p);
    }
}
