package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.reconfigure.PlanPaths;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.MegatronRules;
import io.tenplex.ptc.MegatronStructures;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.RecordedStructures;
import io.tenplex.ptc.StageMap;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import io.tenplex.transform.ShardPlan;
import io.tenplex.transform.ValueCopy;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Keys of the prototype's nested checkpoint layout against real Megatron-LM checkpoints: for every
 * pair of recorded configurations, the paths a reconfiguration writes for each new rank (tensors,
 * optimizer state by position, copied values, regenerated list markers and parameter positions)
 * are exactly the paths Megatron-LM wrote under the new configuration, with the recorded shapes
 * and position lists.
 */
class CheckpointLayoutTest {
    /** A recorded structure as the prototype's client stores it: path to tensor dims, or to a file's content. */
    record Tree(Map<String, long[]> tensors, Map<String, String> files) {
        List<CheckpointLayout.Item> items() {
            List<CheckpointLayout.Item> out = new ArrayList<>();
            tensors.forEach((p, d) -> out.add(new CheckpointLayout.Item(p, true, d.length)));
            files.forEach((p, c) -> out.add(new CheckpointLayout.Item(p, false, 0)));
            return out;
        }
    }

    static Tree tree(JsonNode structure) {
        Tree t = new Tree(new TreeMap<>(), new TreeMap<>());
        for (Iterator<Map.Entry<String, JsonNode>> it = structure.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            walk(e.getValue(), e.getKey(), t);
        }
        return t;
    }

    private static void walk(JsonNode n, String path, Tree t) {
        if (n.isObject() && n.size() == 1 && n.has("tensor")) {
            long[] d = new long[n.get("tensor").size()];
            for (int i = 0; i < d.length; i++) {
                d[i] = n.get("tensor").get(i).asLong();
            }
            t.tensors().put(path + CheckpointLayout.TENSOR_SUFFIX, d);
        } else if (n.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                walk(e.getValue(), path + "/" + e.getKey(), t);
            }
        } else if (n.isArray()) {
            t.files().put(path + "/dir.meta", "list\n" + n.size());
            for (int i = 0; i < n.size(); i++) {
                walk(n.get(i), path + "/" + i, t);
            }
        } else if (n.isTextual() && n.asText().equals("NotPrimitiveNorTensor")) {
            t.files().put(path + ".argparse.Namespace", "");
        } else {
            String suffix = n.isNull() ? ".none" : n.isBoolean() ? ".bool" : n.isIntegralNumber() ? ".int"
                    : n.isNumber() ? ".float" : ".str";
            t.files().put(path + suffix, n.asText());
        }
    }

    private static Ptc ptc(Model m, RecordedStructures.Recorded r) {
        return new Ptc(m, r.config(), RankLayout.MEGATRON, StageMap.uniform(m.layers(), r.config().pp()),
                Ptc.packedDevices(r.config().worldSize(), 4));
    }

    @Test
    void everyRecordedReconfiguration_writesTheLayoutMegatronWrote() throws Exception {
        List<RecordedStructures.Recorded> all = new ArrayList<>();
        for (String c : RecordedStructures.CONFIGS) {
            all.add(RecordedStructures.load(c));
        }
        assertWritesTheLayoutMegatronWrote(all, 16, 50257, DType.F16);
    }

    static Stream<MegatronRules.Arch> bertAndFp32() {
        return Stream.of(new MegatronRules.Arch(true, 4, 64, 4, 1000, 32, false),
                new MegatronRules.Arch(true, 4, 64, 4, 1000, 32, true), new MegatronRules.Arch(false, 4, 64, 4, 1000, 32, true));
    }

    /** BERT and fp32 (structures written from Megatron's rules) between P = 1, 2 and 4 and T = 1, 2. */
    @ParameterizedTest
    @MethodSource("bertAndFp32")
    void bertAndFp32Reconfigurations_writeTheLayoutMegatronWrites(MegatronRules.Arch arch) {
        List<RecordedStructures.Recorded> all = new ArrayList<>();
        for (int[] tp : new int[][] {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 4}}) {
            all.add(MegatronRules.structures(arch, io.tenplex.ptc.ParallelConfig.of(tp[0], tp[1], 1)));
        }
        assertWritesTheLayoutMegatronWrote(all, arch.heads(), arch.vocab(), arch.fp32() ? DType.F32 : DType.F16);
    }

    /**
     * For every pair of configurations, the model inferred from the first, planned as a reconfiguration
     * plans it (the source as saved, the target with the tied head exactly when P > 1), writes for each
     * new rank exactly the paths, shapes and position lists Megatron saved under the second.
     */
    private static void assertWritesTheLayoutMegatronWrote(List<RecordedStructures.Recorded> all, int heads, int vocab,
            DType dtype) {
        int checked = 0;
        for (RecordedStructures.Recorded a : all) {
            Model model = MegatronStructures.infer(a.byRank(), a.config(), RankLayout.MEGATRON, heads, vocab, 128, dtype);
            Map<Integer, CheckpointLayout> sources = new TreeMap<>(); // data-parallel replicas saved nothing
            a.byRank().forEach((rank, s) -> sources.put(rank, CheckpointLayout.of(tree(s).items())));
            for (RecordedStructures.Recorded b : all) {
                Model target = MegatronLayout.forStages(model, b.config().pp()); // the tied head only in pipelines
                Plan plan = Planner.plan(ptc(MegatronLayout.asSaved(model, a.config().pp()), a), ptc(target, b));
                PlanPaths.Result bound = PlanPaths.bind(plan, sources);
                for (Map.Entry<Integer, JsonNode> e : b.byRank().entrySet()) {
                    int rank = e.getKey();
                    Tree want = tree(e.getValue());
                    Map<String, long[]> tensors = new TreeMap<>();
                    for (ShardPlan s : bound.plan().shards()) {
                        if (s.destRank() == rank) {
                            tensors.put(s.key(), s.shape().dims());
                        }
                    }
                    List<String> files = new ArrayList<>();
                    for (ValueCopy v : bound.plan().values()) {
                        if (v.destRank() == rank) {
                            (want.tensors().containsKey(v.key()) ? new ArrayList<String>() : files).add(v.key());
                            if (want.tensors().containsKey(v.key())) {
                                tensors.put(v.key(), want.tensors().get(v.key())); // a tensor inside a value (grad scaler)
                            }
                        }
                    }
                    Map<String, String> generated = bound.generated().get(rank);
                    files.addAll(generated.keySet());
                    String what = a.config() + " -> " + b.config() + " rank " + rank;
                    assertSameSet(want.tensors().keySet(), tensors.keySet(), what);
                    want.tensors().forEach((p, d) -> assertEquals(java.util.Arrays.toString(d),
                            java.util.Arrays.toString(tensors.get(p)), what + " " + p));
                    assertSameSet(want.files().keySet(), new java.util.TreeSet<>(files), what);
                    generated.forEach((p, c) -> assertEquals(want.files().get(p), c, what + " " + p));
                    checked++;
                }
            }
        }
        assertEquals(all.size() * all.stream().mapToInt(r -> r.byRank().size()).sum(), checked); // none skipped
    }

    private static void assertSameSet(java.util.Set<String> want, java.util.Set<String> got, String what) {
        java.util.Set<String> missing = new java.util.TreeSet<>(want);
        missing.removeAll(got);
        java.util.Set<String> extra = new java.util.TreeSet<>(got);
        extra.removeAll(want);
        assertTrue(missing.isEmpty() && extra.isEmpty(), what + ": missing " + first(missing) + ", unexpected "
                + first(extra));
    }

    private static String first(java.util.Set<String> s) {
        return s.size() + " " + s.stream().limit(6).toList();
    }

    @Test
    void keysOfBothLayouts() {
        assertEquals("language_model.encoder.layers.3.mlp.dense_h_to_4h.weight", CheckpointLayout.key(
                "model/language_model/encoder/layers.3.mlp.dense_h_to_4h.weight.numpy.ndarray"));
        assertEquals("optimizer.param_groups.0.lr", CheckpointLayout.key("optimizer/optimizer/param_groups/0/lr.float"));
        assertEquals("language_model.embedding.word_embeddings.weight",
                CheckpointLayout.key("language_model.embedding.word_embeddings.weight"));
        // a pipeline change renumbers the layer in the file name, keeping the directories
        assertEquals("model/language_model/encoder/layers.11.self_attention.dense.weight.numpy.ndarray",
                CheckpointLayout.destPath("model/language_model/encoder/layers.1.self_attention.dense.weight.numpy.ndarray",
                        "language_model.encoder.layers.1.self_attention.dense.weight",
                        "language_model.encoder.layers.11.self_attention.dense.weight"));
        assertEquals("model/word_embeddings_for_head/weight.numpy.ndarray", CheckpointLayout.destPath(
                "model/language_model/embedding/word_embeddings/weight.numpy.ndarray",
                "language_model.embedding.word_embeddings.weight", "word_embeddings_for_head.weight"));
        assertEquals("layers.2.w", CheckpointLayout.destPath("layers.0.w", "layers.0.w", "layers.2.w")); // flat
        CheckpointLayout empty = CheckpointLayout.of(List.of());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> empty.valuePaths("args", 3));
        assertTrue(e.getMessage().contains("rank 3 saved no value 'args'"), e.getMessage());
    }

    @Test
    void bertPipeline_optimizerPositionsFollowMegatronsParameterOrder() {
        // BERT's last stage saves the tied head after lm_head and binary_head, but registers it before
        // them, so its optimizer state sits between the language model's and the heads' positions
        MegatronRules.Arch bert = new MegatronRules.Arch(true, 4, 64, 4, 1000, 32, false);
        io.tenplex.ptc.ParallelConfig c = io.tenplex.ptc.ParallelConfig.of(2, 2, 1);
        Tree t = new Tree(new java.util.LinkedHashMap<>(), new java.util.LinkedHashMap<>()); // creation order, as listed
        for (Iterator<Map.Entry<String, JsonNode>> it = MegatronRules.rank(bert, c, 1).fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            walk(e.getValue(), e.getKey(), t);
        }
        CheckpointLayout layout = CheckpointLayout.of(t.items());
        List<String> saved = new ArrayList<>();
        Map<String, Integer> dims = new java.util.HashMap<>();
        List<List<MegatronRules.Param>> groups = MegatronRules.groups(MegatronRules.parameters(bert, c, 1));
        for (String path : t.tensors().keySet()) {
            if (path.startsWith("model/")) {
                saved.add(CheckpointLayout.key(path));
                dims.put(CheckpointLayout.key(path), t.tensors().get(path).length);
            }
        }
        assertEquals(MegatronLayout.TIED_HEAD, saved.get(saved.size() - 1), "saved last");
        int pos = 0;
        for (List<MegatronRules.Param> group : groups) {
            for (MegatronRules.Param p : group) {
                String want = "optimizer/optimizer/state/" + pos++ + "/exp_avg" + CheckpointLayout.TENSOR_SUFFIX;
                assertEquals(want, layout.tensorPath("optimizer.exp_avg." + p.key(), 1), p.key());
                assertEquals(want, CheckpointLayout.megatronOptimizerPath("optimizer.exp_avg." + p.key(),
                        CheckpointLayout.groups(saved, dims)), p.key());
            }
        }
    }

    @Test
    void saved_givesEachTensorKeysShape_andGroupsValuesUpToTheirHighestDirectoryWithoutTensors() {
        io.tenplex.ptc.TensorMeta w = io.tenplex.ptc.TensorMeta.of(DType.F32, 4, 2);
        CheckpointLayout l = CheckpointLayout.of(List.of(
                new CheckpointLayout.Item("model/layers.0.w.numpy.ndarray", true, 2, w),
                new CheckpointLayout.Item("optimizer/exp_avg/layers.0.w.numpy.ndarray", true, 2, w),
                new CheckpointLayout.Item("optimizer/step.float", false, 0),
                new CheckpointLayout.Item("optimizer/param_groups/dir.meta", false, 0),
                new CheckpointLayout.Item("optimizer/param_groups/0/lr.float", false, 0),
                new CheckpointLayout.Item("optimizer/param_groups/0/betas/dir.meta", false, 0),
                new CheckpointLayout.Item("args.argparse.Namespace", false, 0)));
        var saved = l.saved(3);
        assertEquals(List.of("layers.0.w", "optimizer.exp_avg.layers.0.w"), List.copyOf(saved.tensors().keySet()));
        assertEquals(w, saved.tensors().get("optimizer.exp_avg.layers.0.w"));
        assertEquals(java.util.Set.of("optimizer.step", "optimizer.param_groups", "args"), saved.values());
        for (String v : saved.values()) {
            assertTrue(!l.valuePaths(v, 3).isEmpty(), v);
        }
        CheckpointLayout unknown = CheckpointLayout.of(List.of(new CheckpointLayout.Item("model/a.numpy.ndarray", true,
                1)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> unknown.saved(5));
        assertTrue(e.getMessage().contains("rank 5") && e.getMessage().contains("model/a.numpy.ndarray"), e::getMessage);
    }

    @Test
    void twoSavedTensorsOfOneKey_areRefusedNamingBoth() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CheckpointLayout.of(List.of(
                new CheckpointLayout.Item("model/layers.0.fc1.weight.numpy.ndarray", true, 2),
                new CheckpointLayout.Item("model/layers/0/fc1/weight.numpy.ndarray", true, 2))));
        assertEquals("saved tensors model/layers.0.fc1.weight.numpy.ndarray and model/layers/0/fc1/weight.numpy.ndarray "
                + "are both key 'layers.0.fc1.weight'; save one of them under another name", e.getMessage());
    }
}
