package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.GenerationsStatus;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Seals, complete generations, the current one, and the listener events, on one store. */
class GenerationsTest {
    private final TensorStore store = new TensorStore(new Allocator(64L << 20));
    private final Generations generations = new Generations(store);
    private final List<String> events = new ArrayList<>();
    private final ObjectMapper json = new ObjectMapper();

    GenerationsTest() {
        generations.addListener(new Generations.Listener() {
            @Override
            public void completed(String job, long step) {
                events.add("completed " + job + " " + step);
            }

            @Override
            public void dropped(String job, long step) {
                events.add("dropped " + job + " " + step);
            }
        });
    }

    @AfterEach
    void close() {
        store.close(); // fails if a snapshot leaked
    }

    private void save(int rank, String text) {
        Fixtures.putFile(store, "/job/j/save/" + rank + "/rng_state", text.getBytes(StandardCharsets.UTF_8), true);
    }

    private void sealBoth(long step) throws Exception {
        save(0, "step " + step);
        save(1, "step " + step);
        generations.seal("j", step, 0, 2, json.readTree("{\"tp\": 2}"));
        generations.seal("j", step, 1, 2, null);
        generations.sealed("j", step, List.of(0, 1), 2, null);
    }

    @Test
    void seal_snapshotsTheRank_andLaterWritesDoNotShowThrough() throws Exception {
        save(0, "before");
        SealManifest manifest = generations.seal("j", 5, 0, 2, null);
        assertEquals(0, manifest.rank());
        save(0, "after");
        assertArrayEquals("before".getBytes(StandardCharsets.UTF_8),
                Fixtures.readAll(store, "/job/j/generations/5/0/rng_state"));
    }

    @Test
    void aSupersededGeneration_isListedAsLost_withItsReason_untilItCompletesAgain() throws Exception {
        sealBoth(5);
        sealBoth(6);
        generations.supersede("j", 6, 5);
        assertEquals(OptionalLong.of(5), generations.current("j"));
        GenerationsStatus.Generation six = generations.describe("j").generations().stream()
                .filter(g -> g.step() == 6).findFirst().orElseThrow();
        assertEquals("superseded: the job went back to generation 5", six.lost());
        assertFalse(six.complete());
        assertTrue(generations.describe("j").generations().stream().filter(g -> g.step() == 5)
                .allMatch(g -> g.lost() == null), "the current one is not lost");
        generations.lost().lost("j", 9, "flushed nowhere");
        sealBoth(9); // saved and completed again: no longer lost
        assertTrue(generations.describe("j").generations().stream().noneMatch(g -> g.step() == 9 && g.lost() != null));
    }

    @Test
    void sealed_completesWhenEveryRankIsSealed_andNamesTheCurrentGeneration() throws Exception {
        assertFalse(generations.sealed("j", 5, List.of(0), 2, json.readTree("{\"tp\": 2}")));
        assertEquals(OptionalLong.empty(), generations.current("j"));
        assertTrue(events.isEmpty());
        assertTrue(generations.sealed("j", 5, List.of(1), 2, null));
        assertEquals(OptionalLong.of(5), generations.current("j"));
        assertEquals(List.of("completed j 5"), events);
        assertEquals(2, generations.config("j", 5).path("tp").asInt());
        assertTrue(generations.sealed("j", 5, List.of(0, 1), 2, null), "idempotent");
        assertEquals(1, events.size(), "completed once");
    }

    @Test
    void complete_dropsGenerationsOlderThanThePreviousOne_andSaysSo() throws Exception {
        sealBoth(5);
        sealBoth(6);
        assertTrue(store.stat(StorePath.parse("/job/j/generations/5")).isPresent(), "the previous one stays");
        sealBoth(7);
        assertEquals(List.of("completed j 5", "completed j 6", "dropped j 5", "completed j 7"), events);
        assertTrue(store.stat(StorePath.parse("/job/j/generations/5")).isEmpty());
        assertEquals(OptionalLong.of(7), generations.current("j"));
    }

    @Test
    void sealed_aStepNotNewerThanTheCurrentGeneration_isAConflict() throws Exception {
        sealBoth(5);
        StoreException e = assertThrows(StoreException.class, () -> generations.sealed("j", 4, List.of(0), 2, null));
        assertEquals(StoreException.Kind.CONFLICT, e.kind());
        assertThrows(IllegalArgumentException.class, () -> generations.sealed("j", 8, List.of(2), 2, null));
    }

    @Test
    void seal_aDifferentStateAtAStepTheRankSealed_isAConflict_butARetryIsNot() throws Exception {
        sealBoth(0);
        assertEquals(0, generations.seal("j", 0, 0, 2, null).rank(), "the same state again is a retry");
        save(0, "a newer state at the same step");
        StoreException e = assertThrows(StoreException.class, () -> generations.seal("j", 0, 0, 2, null));
        assertEquals(StoreException.Kind.CONFLICT, e.kind());
        assertTrue(e.getMessage().contains("newer step"), e.getMessage());
        assertArrayEquals("step 0".getBytes(StandardCharsets.UTF_8),
                Fixtures.readAll(store, "/job/j/generations/0/0/rng_state"), "the generation is unchanged");
    }

    @Test
    void seal_aDifferentStateIntoAnIncompleteStep_isAConflictToo() throws Exception {
        save(0, "first");
        generations.seal("j", 3, 0, 2, null);
        save(0, "second");
        assertThrows(StoreException.class, () -> generations.seal("j", 3, 0, 2, null));
    }

    @Test
    void retryOfASealWhoseManifestIsGone_isAConflict_notAnError() throws Exception {
        save(0, "a");
        generations.seal("j", 1, 0, 2, null);
        store.delete(StorePath.parse("/job/j/generations/1/manifests/0.json"));
        StoreException e = assertThrows(StoreException.class, () -> generations.seal("j", 1, 0, 2, null));
        assertEquals(StoreException.Kind.CONFLICT, e.kind());
        assertTrue(e.getMessage().contains("manifest") && e.getMessage().contains("missing"), e.getMessage());
    }

    @Test
    void sealFromAGivenTree_sealsThatTree_notSave() throws Exception {
        save(0, "in save");
        Fixtures.putFile(store, "/job/j/staging/c1/rng_state", "committed".getBytes(StandardCharsets.UTF_8), true);
        generations.seal("j", 1, 0, 1, null, StorePath.parse("/job/j/staging/c1"));
        assertEquals("committed", new String(Fixtures.readAll(store, "/job/j/generations/1/0/rng_state"),
                StandardCharsets.UTF_8));
    }

    @Test
    void aCurrentGenerationFileThatIsNotAStep_fallsBackToTheNewestCompleteGeneration() throws Exception {
        sealBoth(10);
        Fixtures.putFile(store, "/job/j/generation", "garbage".getBytes(StandardCharsets.UTF_8), true);
        assertEquals(OptionalLong.of(10), generations.current("j"));
        sealBoth(20);
        assertEquals(OptionalLong.of(20), generations.current("j"));
    }

    @Test
    void stepsOf19Digits_sealComplete_andAreListed() throws Exception {
        long step = 1_764_191_000_123_456_789L;
        sealBoth(step);
        assertEquals(OptionalLong.of(step), generations.current("j"));
        assertTrue(generations.describe("j").generations().stream().anyMatch(g -> g.step() == step && g.complete()
                && g.localRanks().equals(List.of(0, 1))));
    }
}
