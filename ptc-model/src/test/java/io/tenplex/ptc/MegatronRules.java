package io.tenplex.ptc;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Checkpoint structures of Megatron-LM ranks (the form of the recorded ones) written from
 * Megatron's rules, for the cases no recorded run covers (BERT, fp32). Written independently of
 * {@link MegatronLayout} and {@link MegatronStructures}, from Megatron's model code:
 * <ul>
 *   <li>parameters are registered language model first (embeddings on the first stage, the layers,
 *       the final norm and BERT's pooler on the last), then the last stage's tied head
 *       {@code word_embeddings} when P > 1, then BERT's {@code lm_head} (its bias, dense, layernorm) and
 *       {@code binary_head};</li>
 *   <li>the checkpoint saves the language model, then {@code lm_head} and {@code binary_head}, then
 *       the tied head as {@code word_embeddings_for_head};</li>
 *   <li>the optimizer has two parameter groups, matrices (weight decay) then biases and vectors, each
 *       in parameter order, and its state is keyed by position across both;</li>
 *   <li>fp16: the torch optimizer's state dict is wrapped under {@code optimizer} next to the
 *       {@code grad_scaler} and the fp32 master copies {@code fp32_from_fp16_params}; fp32: the
 *       optimizer state dict is the torch one itself, {@code optimizer.state.<i>}, with no copies.</li>
 * </ul>
 */
public final class MegatronRules {
    private static final ObjectMapper JSON = new ObjectMapper();

    private MegatronRules() {
    }

    /** A GPT or BERT (24 layers or fewer) as its checkpoint structures see it. */
    public record Arch(boolean bert, int layers, int hidden, int heads, int vocab, int seq, boolean fp32) {
        long padded(int tp) {
            long unit = 128L * tp;
            return (vocab + unit - 1) / unit * unit;
        }
    }

    /** One parameter: its key in the model (as shard keys read), its shard shape, and where it is saved. */
    public record Param(String key, long[] shape, List<String> savedAt) {}

    /** The structures of the data-parallel-0 ranks of a configuration. */
    public static RecordedStructures.Recorded structures(Arch a, ParallelConfig c) {
        Map<Integer, com.fasterxml.jackson.databind.JsonNode> byRank = new LinkedHashMap<>();
        for (int stage = 0; stage < c.pp(); stage++) {
            for (int t = 0; t < c.tp(); t++) {
                byRank.put(RankLayout.MEGATRON.rank(new RankLayout.Coord(t, 0, stage), c), rank(a, c, stage));
            }
        }
        return new RecordedStructures.Recorded(c, byRank);
    }

    /** The parameters of a stage in Megatron's parameter order. */
    public static List<Param> parameters(Arch a, ParallelConfig c, int stage) {
        int t = c.tp();
        long h = a.hidden();
        long v = a.padded(t) / t;
        boolean pre = stage == 0;
        boolean post = stage == c.pp() - 1;
        List<Param> ps = new ArrayList<>();
        if (pre) {
            ps.add(p("language_model.embedding.word_embeddings.weight", "model/language_model/embedding/word_embeddings/weight", v, h));
            ps.add(p("language_model.embedding.position_embeddings.weight", "model/language_model/embedding/position_embeddings/weight", a.seq(), h));
            if (a.bert()) {
                ps.add(p("language_model.embedding.tokentype_embeddings.weight", "model/language_model/embedding/tokentype_embeddings/weight", 2, h));
            }
        }
        int per = a.layers() / c.pp();
        for (int l = 0; l < per; l++) {
            String e = "model/language_model/encoder/layers." + l + ".";
            ps.add(p(e + "input_layernorm.weight", h));
            ps.add(p(e + "input_layernorm.bias", h));
            ps.add(p(e + "self_attention.query_key_value.weight", 3 * h / t, h));
            ps.add(p(e + "self_attention.query_key_value.bias", 3 * h / t));
            ps.add(p(e + "self_attention.dense.weight", h, h / t));
            ps.add(p(e + "self_attention.dense.bias", h));
            ps.add(p(e + "post_attention_layernorm.weight", h));
            ps.add(p(e + "post_attention_layernorm.bias", h));
            ps.add(p(e + "mlp.dense_h_to_4h.weight", 4 * h / t, h));
            ps.add(p(e + "mlp.dense_h_to_4h.bias", 4 * h / t));
            ps.add(p(e + "mlp.dense_4h_to_h.weight", h, 4 * h / t));
            ps.add(p(e + "mlp.dense_4h_to_h.bias", h));
        }
        if (post) {
            ps.add(p("model/language_model/encoder/final_layernorm.weight", h));
            ps.add(p("model/language_model/encoder/final_layernorm.bias", h));
            if (a.bert()) {
                ps.add(p("model/language_model/pooler/dense.weight", h, h));
                ps.add(p("model/language_model/pooler/dense.bias", h));
            }
            if (!pre) {
                ps.add(p("word_embeddings_for_head.weight", "model/word_embeddings_for_head/weight", v, h));
            }
            if (a.bert()) {
                for (String n : new String[] {"bias", "dense.weight", "dense.bias", "layernorm.weight", "layernorm.bias"}) {
                    ps.add(n.equals("bias") ? p("model/lm_head/bias", v) : n.equals("dense.weight")
                            ? p("model/lm_head/" + n, h, h) : p("model/lm_head/" + n, h));
                }
                ps.add(p("binary_head.weight", "model/binary_head/weight", 2, h));
                ps.add(p("binary_head.bias", "model/binary_head/bias", 2));
            }
        }
        return ps;
    }

    private static Param p(String path, long... shape) {
        String key = path.substring("model/".length()).replace('/', '.');
        return p(key, path, shape);
    }

    private static Param p(String key, String path, long... shape) {
        return new Param(key, shape, List.of(path.split("/")));
    }

    /** Megatron's optimizer groups: weight decay for all but biases and vectors. */
    public static List<List<Param>> groups(List<Param> ps) {
        List<Param> decay = new ArrayList<>();
        List<Param> noDecay = new ArrayList<>();
        for (Param p : ps) {
            (p.key().endsWith(".bias") || p.shape().length == 1 ? noDecay : decay).add(p);
        }
        return List.of(decay, noDecay);
    }

    /** The rank's structure: the model saved in checkpoint order, the optimizer by parameter position. */
    public static ObjectNode rank(Arch a, ParallelConfig c, int stage) {
        ObjectNode root = JSON.createObjectNode();
        root.put("args", "NotPrimitiveNorTensor");
        root.put("checkpoint_version", 3.0);
        root.put("iteration", 50);
        List<Param> ps = parameters(a, c, stage);
        List<Param> saveOrder = new ArrayList<>(ps);
        saveOrder.sort(java.util.Comparator.comparingInt(p -> p.savedAt().get(1).equals("word_embeddings_for_head") ? 1 : 0));
        ObjectNode model = root.putObject("model");
        for (Param p : saveOrder) {
            ObjectNode n = model;
            for (int i = 1; i < p.savedAt().size() - 1; i++) {
                n = n.has(p.savedAt().get(i)) ? (ObjectNode) n.get(p.savedAt().get(i)) : n.putObject(p.savedAt().get(i));
            }
            tensor(n.putObject(p.savedAt().get(p.savedAt().size() - 1)), p.shape());
        }
        optimizer(root.putObject("optimizer"), a, groups(ps));
        root.putObject("opt_param_scheduler").put("max_lr", 0.00015).put("num_steps", 4352);
        root.putArray("rng_state").addObject().put("seed", stage);
        return root;
    }

    private static void optimizer(ObjectNode opt, Arch a, List<List<Param>> groups) {
        ObjectNode torch = a.fp32() ? opt : opt.putObject("optimizer");
        ObjectNode state = torch.putObject("state");
        ArrayNode paramGroups = torch.putArray("param_groups");
        int pos = 0;
        for (int g = 0; g < 2; g++) {
            ObjectNode group = paramGroups.addObject().put("lr", 5.1e-5).put("weight_decay", g == 0 ? 0.01 : 0.0);
            ArrayNode params = group.putArray("params");
            for (Param p : groups.get(g)) {
                params.add(pos);
                ObjectNode s = state.putObject(Integer.toString(pos++));
                tensor(s.putObject("exp_avg"), p.shape());
                tensor(s.putObject("exp_avg_sq"), p.shape());
            }
        }
        if (a.fp32()) {
            return;
        }
        ObjectNode scaler = opt.putObject("grad_scaler");
        tensor(scaler.putObject("scale"), 1);
        scaler.put("growth_tracker", 12);
        ArrayNode copies = opt.putArray("fp32_from_fp16_params");
        for (List<Param> group : groups) {
            ArrayNode g = copies.addArray();
            group.forEach(p -> tensor(g.addObject(), p.shape()));
        }
    }

    private static void tensor(ObjectNode n, long... shape) {
        ArrayNode dims = n.putArray("tensor");
        for (long d : shape) {
            dims.add(d);
        }
    }

    /** The shard shapes a rank's structure must read as: its parameters, their moments and (fp16) master copies. */
    public static Map<String, Shape> expectedShards(Arch a, ParallelConfig c, int stage) {
        Map<String, Shape> out = new LinkedHashMap<>();
        List<Param> ps = parameters(a, c, stage);
        for (Param p : ps) {
            out.put(p.key(), Shape.of(p.shape()));
        }
        for (String kind : a.fp32() ? List.of("exp_avg", "exp_avg_sq") : List.of("exp_avg", "exp_avg_sq", "fp32_param")) {
            for (Param p : ps) {
                out.put("optimizer." + kind + "." + p.key(), Shape.of(p.shape()));
            }
        }
        return out;
    }
}
