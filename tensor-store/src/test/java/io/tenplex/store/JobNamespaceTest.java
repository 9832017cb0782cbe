package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class JobNamespaceTest {

    @Test
    void jobTrees_areOneComponentBelowJob() {
        assertEquals("/job/gpt", JobNamespace.root("gpt").toString());
        assertEquals("/job/gpt/save/0", JobNamespace.path("gpt", "save/0").toString());
        assertThrows(IllegalArgumentException.class, () -> JobNamespace.root("a/b"));
        assertThrows(StoreException.class, () -> JobNamespace.root(".."));
    }

    @Test
    void locate_splitsAPathIntoItsJobAndTheRest() {
        assertEquals(new JobNamespace.Located("gpt", "head.txt"), JobNamespace.locate("/job/gpt/head.txt").orElseThrow());
        assertEquals(new JobNamespace.Located("gpt", "a/b"), JobNamespace.locate("/job/gpt/a/b").orElseThrow());
        assertEquals(new JobNamespace.Located("gpt", ""), JobNamespace.locate("/job/gpt").orElseThrow());
        assertTrue(JobNamespace.locate("/job").isEmpty());
        assertTrue(JobNamespace.locate("/job/").isEmpty());
        assertTrue(JobNamespace.locate("/jobs/x").isEmpty());
        assertTrue(JobNamespace.locate("/other/x").isEmpty());
    }
}
