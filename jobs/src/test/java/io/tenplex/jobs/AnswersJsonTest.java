package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Pins the JSON text of the jobs module's answers and stored manifests (field order, absent and null
 * fields, number formats), serialised by a plain {@link ObjectMapper}: the wire must not change silently.
 */
class AnswersJsonTest {
    private final TensorStore store = new TensorStore(new Allocator(16L << 20));
    private final Generations generations = new Generations(store);
    private final ObjectMapper json = new ObjectMapper();

    @AfterEach
    void close() {
        store.close();
    }

    private String text(Object o) throws Exception {
        return json.writeValueAsString(o);
    }

    @Test
    void sealManifest_storedPrettyPrinted_withTensorsAndFiles() throws Exception {
        Fixtures.putF32(store, "/job/j/save/1/model/w", 2, 3);
        Fixtures.putFile(store, "/job/j/save/1/rng_state", "abc".getBytes(StandardCharsets.UTF_8), false);
        var manifest = generations.seal("j", 7, 1, 2, null);
        String stored = new String(Fixtures.readAll(store, "/job/j/generations/7/manifests/1.json"),
                StandardCharsets.UTF_8);
        String crcW = json.readTree(stored).at("/tensors/model~1w/crc32c").asText();
        String crcR = json.readTree(stored).at("/files/rng_state/crc32c").asText();
        assertEquals("{\n  \"rank\" : 1,\n  \"step\" : 7,\n  \"bytes\" : 27,\n  \"tensors\" : {\n"
                + "    \"model/w\" : {\n      \"dtype\" : \"f32\",\n      \"shape\" : [ 2, 3 ],\n"
                + "      \"size\" : 24,\n      \"crc32c\" : \"" + crcW + "\"\n    }\n  },\n  \"files\" : {\n"
                + "    \"rng_state\" : {\n      \"size\" : 3,\n      \"crc32c\" : \"" + crcR + "\"\n    }\n  }\n}",
                stored.replace("\r\n", "\n"));
        assertEquals(text(json.readTree(stored)), text(manifest), "the answer is what was stored");
    }

    @Test
    void sealManifest_ofARankThatSavedNothing_hasEmptyObjects() throws Exception {
        generations.seal("j", 3, 0, 1, null);
        String stored = new String(Fixtures.readAll(store, "/job/j/generations/3/manifests/0.json"),
                StandardCharsets.UTF_8);
        assertEquals("{\n  \"rank\" : 0,\n  \"step\" : 3,\n  \"bytes\" : 0,\n  \"tensors\" : { },\n  \"files\" : { }\n}",
                stored.replace("\r\n", "\n"));
    }

    @Test
    void generationsDescribe_nullCurrent_localOnly_andKnownSteps() throws Exception {
        assertEquals("{\"current\":null,\"generations\":[]}", text(generations.describe("j")));
        generations.seal("j", 5, 0, 2, json.readTree("{\"tp\":2}"));
        assertEquals("{\"current\":null,\"generations\":[{\"step\":5,\"complete\":false,\"world\":2,"
                + "\"sealedRanks\":[],\"config\":{\"tp\":2},\"localRanks\":[0],\"levels\":[]}]}", text(generations.describe("j")));
        generations.sealed("j", 5, List.of(0, 1), 2, null);
        assertEquals("{\"current\":5,\"generations\":[{\"step\":5,\"complete\":true,\"world\":2,"
                + "\"sealedRanks\":[0,1],\"config\":{\"tp\":2},\"localRanks\":[0],\"levels\":[\"memory\"]}]}", text(generations.describe("j")));
        Generations restarted = new Generations(store);
        assertEquals("{\"current\":5,\"generations\":[{\"step\":5,\"complete\":true,\"localRanks\":[0],\"levels\":[]}]}",
                text(restarted.describe("j")), "a step only in the store: no world, ranks or config");
    }

    @Test
    void stopDescribe_lowered_raisedAtAStep_andRaisedAtOnce() throws Exception {
        StopFlags flags = new StopFlags();
        assertEquals("{\"stop\":false,\"raised\":false,\"raises\":0}", text(flags.describe("j", OptionalLong.empty())));
        flags.raise("j", OptionalLong.of(12), "resize");
        assertEquals("{\"stop\":false,\"raised\":true,\"raises\":1,\"atStep\":12,\"reason\":\"resize\","
                + "\"asks\":{\"count\":0,\"highestStep\":null}}", text(flags.ask("j", OptionalLong.of(11))));
        flags.ask("j", OptionalLong.empty()); // a read without a step: counted, no step
        assertEquals("{\"stop\":false,\"raised\":true,\"raises\":1,\"atStep\":12,\"reason\":\"resize\","
                + "\"asks\":{\"count\":2,\"highestStep\":11}}", text(flags.describe("j", OptionalLong.of(11))));
        flags.raise("j", OptionalLong.empty(), "now"); // a new raise: its asks start again
        assertEquals("{\"stop\":true,\"raised\":true,\"raises\":2,\"atStep\":null,\"reason\":\"now\","
                + "\"asks\":{\"count\":0,\"highestStep\":null}}", text(flags.describe("j", OptionalLong.of(11))));
        flags.clear("j");
        assertEquals("{\"stop\":false,\"raised\":false,\"raises\":2}", text(flags.describe("j", OptionalLong.empty())));
    }

    @Test
    void manifestItem_ofAFile_withAnUnknownChecksum_writesItAsNull() throws Exception {
        assertEquals("{\"size\":0,\"crc32c\":null}", text(new SealManifest.Item(null, null, 0, null)));
        assertEquals("{\"dtype\":\"bf16\",\"shape\":[],\"size\":2,\"crc32c\":\"0000abcd\"}",
                text(new SealManifest.Item("bf16", List.of(), 2, "0000abcd")));
    }

    @Test
    void resealedRank_answersTheStoredManifest() throws Exception {
        Fixtures.putF32(store, "/job/j/save/0/w", 4);
        SealManifest first = generations.seal("j", 2, 0, 1, null);
        assertEquals(first, generations.seal("j", 2, 0, 1, null));
        assertEquals(List.of(4L), first.tensors().get("w").shape());
    }

    @Test
    void generationsDescribe_aNullConfig_isWrittenAsNull() throws Exception {
        generations.sealed("j", 5, List.of(0), 2, json.readTree("null"));
        assertEquals("{\"current\":null,\"generations\":[{\"step\":5,\"complete\":false,\"world\":2,"
                + "\"sealedRanks\":[0],\"config\":null,\"localRanks\":[],\"levels\":[]}]}", text(generations.describe("j")));
    }
}
