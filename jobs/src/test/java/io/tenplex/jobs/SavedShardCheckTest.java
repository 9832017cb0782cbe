package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The check of a rank's saved tree against the stored model spec, on Megatron's nested layout: the
 * last stage's tied word embeddings and the optimizer state stored by parameter position are compared
 * as a reconfiguration reads them, and a contradiction names the tensor, its partition and both shapes.
 */
class SavedShardCheckTest {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final ParallelConfig CONFIG = ParallelConfig.of(2, 2, 1);
    private static final int LAST_STAGE_RANK = 2; // Megatron's order: rank = pp·(T·D) + dp·T + tp
    private final TensorStore store = new TensorStore(new Allocator(64L << 20));
    private final SavedShardCheck check = new SavedShardCheck(store);
    private final JobLayout paths = new JobLayout("j");

    @AfterEach
    void close() {
        store.close();
    }

    private static JsonNode config() throws Exception {
        return new ObjectMapper().readTree("{\"tp\": 2, \"pp\": 2, \"dp\": 1}");
    }

    private static String nested(String key) {
        String enc = ".encoder.";
        return (key.contains(enc) ? "model/language_model/encoder/" + key.substring(key.indexOf(enc) + enc.length())
                : "model/" + key.replace('.', '/')) + CheckpointLayout.TENSOR_SUFFIX;
    }

    private static List<List<String>> groups(Ptc ptc, int rank) {
        List<String> params = new ArrayList<>();
        Map<String, Integer> dims = new LinkedHashMap<>();
        for (Ptc.Shard s : ptc.shards(rank)) {
            if (!s.key().startsWith("optimizer.")) {
                params.add(s.key());
                dims.put(s.key(), s.shape().rank());
            }
        }
        return CheckpointLayout.groups(params, dims);
    }

    /** Saves {@code rank}'s shards of {@code ptc} as Megatron does, each meta changed by {@code change} (by key). */
    private void save(Ptc ptc, int rank, Map<String, UnaryOperator<TensorMeta>> change) {
        for (Ptc.Shard s : ptc.shards(rank)) {
            String path = s.key().startsWith("optimizer.")
                    ? CheckpointLayout.megatronOptimizerPath(s.key(), groups(ptc, rank)) : nested(s.key());
            TensorMeta m = change.getOrDefault(s.key(), x -> x).apply(new TensorMeta(s.spec().dtype(), s.shape()));
            Fixtures.putTensor(store, paths.savedRank(rank) + "/" + path, m, new byte[(int) m.byteSize()], true);
        }
        Fixtures.putFile(store, paths.savedRank(rank) + "/iteration.int", "5".getBytes(), true);
    }

    private void describe(Model m) {
        SmallFiles.put(store, paths.modelSpec(), ModelSpecJson.write(m));
    }

    @Test
    void theLastStage_withItsTiedHeadAndPositionalOptimizerState_matchesEitherDescription() throws Exception {
        Ptc piped = Ptc.packed(MegatronLayout.model(GPT, 2), CONFIG, 4);
        assertTrue(piped.shards(LAST_STAGE_RANK).stream().anyMatch(s -> s.key().endsWith(MegatronLayout.TIED_HEAD)));
        save(piped, LAST_STAGE_RANK, Map.of());
        assertDoesNotThrow(() -> check.check("j", LAST_STAGE_RANK, config(), paths.savedRank(LAST_STAGE_RANK)),
                "nothing described: nothing to check");
        describe(MegatronLayout.model(GPT, 2));
        check.check("j", LAST_STAGE_RANK, config(), paths.savedRank(LAST_STAGE_RANK));
        describe(MegatronLayout.model(GPT, 1)); // described for one stage: the tied head is not described
        check.check("j", LAST_STAGE_RANK, config(), paths.savedRank(LAST_STAGE_RANK));
        check.check("j", LAST_STAGE_RANK, null, paths.savedRank(LAST_STAGE_RANK)); // no configuration: no check
    }

    @Test
    void aTiedHeadOrOptimizerStateThatContradictsTheDescription_isRefusedNamingTensorRuleAndShapes() throws Exception {
        Model m = MegatronLayout.model(GPT, 2);
        Ptc piped = Ptc.packed(m, CONFIG, 4);
        describe(m);
        String head = MegatronLayout.TIED_HEAD;
        save(piped, LAST_STAGE_RANK, Map.of(head, x -> new TensorMeta(x.dtype(), Shape.of(64, 512))));
        StoreException e = assertThrows(StoreException.class,
                () -> check.check("j", LAST_STAGE_RANK, config(), paths.savedRank(LAST_STAGE_RANK)));
        assertEquals(StoreException.Kind.BAD_REQUEST, e.kind());
        assertEquals("rank 2 of job j does not match the model spec stored with the job (/job/j/model.json): under "
                + "(T,P,D)=(2,2,1) tensor " + head + " (model/" + head.replace('.', '/') + ".numpy.ndarray), "
                + "f16[1024, 64] with partition vocab (split dim 0, padded to a multiple of 128·T), is described as "
                + "f16[512, 64] on rank 2 but saved as f16[64, 512]; correct the description (spec=) or what the rank "
                + "saves; nothing was sealed: save again", e.getMessage());

        String dense = "language_model.encoder.layers.1.mlp.dense_4h_to_h.weight";
        String state = "optimizer.fp32_param." + dense;
        save(piped, LAST_STAGE_RANK, Map.of(state, x -> new TensorMeta(DType.F16, x.shape())));
        e = assertThrows(StoreException.class,
                () -> check.check("j", LAST_STAGE_RANK, config(), paths.savedRank(LAST_STAGE_RANK)));
        assertTrue(e.getMessage().contains("tensor optimizer.fp32_param.language_model.encoder.layers.3.mlp."
                + "dense_4h_to_h.weight (optimizer/fp32_from_fp16_params/0/"), e.getMessage());
        assertTrue(e.getMessage().contains("f32[64, 256] with partition row (split dim 1), is described as "
                + "f32[64, 128] on rank 2 but saved as f16[64, 128]"), e.getMessage());
    }

    @Test
    void aDescriptionTheConfigurationCannotPlace_isRefused() throws Exception {
        SmallFiles.put(store, paths.modelSpec(), "{\"layers\": 1, \"tensors\": [{\"name\": \"w\", \"dtype\": \"f32\", "
                + "\"shape\": [30], \"layer\": 0, \"partition\": {\"kind\": \"split\", \"dim\": 0}}]}");
        Fixtures.putF32(store, paths.savedRank(0) + "/w", 8);
        JsonNode four = new ObjectMapper().readTree("{\"tp\": 4}");
        StoreException e = assertThrows(StoreException.class, () -> check.check("j", 0, four, paths.savedRank(0)));
        assertTrue(e.getMessage().startsWith("rank 0 of job j does not match the model spec stored with the job "
                + "(/job/j/model.json): it cannot be placed under (T,P,D)=(4,1,1): w: "
                + "dim 0 of size 30"), e.getMessage());
    }
}
