package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.LoadChoice;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What a rank loads: the latest complete generation, unless a reconfiguration's output is as new. */
class LoadChoiceTest {
    private final TensorStore store = new TensorStore(new Allocator(64L << 20));
    private final Generations generations = new Generations(store);

    @AfterEach
    void close() {
        store.close();
    }

    private void saveAndSeal(long step) throws Exception {
        Fixtures.putFile(store, "/job/j/save/0/rng_state", ("step " + step).getBytes(StandardCharsets.UTF_8), true);
        generations.seal("j", step, 0, 1, null);
        generations.sealed("j", step, List.of(0), 1, null);
    }

    private void reconfigured(long fromStep) {
        Fixtures.putFile(store, "/job/j/load/0/rng_state", "prepared".getBytes(StandardCharsets.UTF_8), true);
        Fixtures.putFile(store, "/job/j/iter", Long.toString(fromStep).getBytes(StandardCharsets.UTF_8), true);
    }

    @Test
    void aSaveWithNoReconfiguration_loadsTheGeneration() throws Exception {
        saveAndSeal(7);
        assertEquals(new LoadChoice("/job/j/generations/7/0", 7, LoadChoice.GENERATION),
                LoadChoice.choose(store, generations, "j", 0));
    }

    @Test
    void aReconfigurationOfTheLatestGeneration_wins() throws Exception {
        saveAndSeal(45);
        reconfigured(45);
        assertEquals(new LoadChoice("/job/j/load/0", 45, LoadChoice.RECONFIGURATION),
                LoadChoice.choose(store, generations, "j", 0));
    }

    @Test
    void aNewerGenerationThanTheReconfiguration_wins() throws Exception {
        saveAndSeal(45);
        reconfigured(45);
        saveAndSeal(60);
        assertEquals(new LoadChoice("/job/j/generations/60/0", 60, LoadChoice.GENERATION),
                LoadChoice.choose(store, generations, "j", 0));
    }

    @Test
    void nothingSaved_isNotFound_andSoIsARankTheGenerationLacksHere() throws Exception {
        StoreException e = assertThrows(StoreException.class, () -> LoadChoice.choose(store, generations, "j", 0));
        assertEquals(StoreException.Kind.NOT_FOUND, e.kind());
        saveAndSeal(3);
        e = assertThrows(StoreException.class, () -> LoadChoice.choose(store, generations, "j", 1));
        assertTrue(e.getMessage().contains("generation 3"), e.getMessage());
    }
}
