package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class JobNamespaceTest {

    @Test
    void jobTrees_areOneComponentBelowJob() {
        assertEquals("/job/gpt", JobNamespace.root("gpt").toString());
        assertEquals("/job/gpt/save/0", JobNamespace.path("gpt", "save/0").toString());
        assertThrows(StoreException.class, () -> JobNamespace.root("a/b"));
        assertThrows(StoreException.class, () -> JobNamespace.root(".."));
    }

    @Test
    void names_theWholeRule_everyNameThatNamesOneDirectoryBelowJob() {
        for (String ok : List.of("a", "gpt-3.5_x", ".hidden", "..x", "x y", "a%2Fb", "r?s#t", "\u00e9", "a\\b",
                "x".repeat(255), "\u00e9".repeat(127))) {
            assertNull(JobNamespace.nameProblem(ok), ok);
            assertEquals(ok, JobNamespace.requireValidName(ok));
            assertEquals(2, JobNamespace.root(ok).parts().size(), ok);
        }
        for (String bad : List.of("", ".", "..", "/", "a/b", "a/", "/a", "a\0b", "\0", "x".repeat(256),
                "\u00e9".repeat(128))) {
            StoreException e = assertThrows(StoreException.class, () -> JobNamespace.requireValidName(bad), bad);
            assertEquals(StoreException.Kind.BAD_REQUEST, e.kind());
            assertTrue(e.getMessage().contains(JobNamespace.NAME_RULE), e.getMessage());
            assertThrows(StoreException.class, () -> JobNamespace.root(bad), bad);
        }
        assertThrows(StoreException.class, () -> JobNamespace.requireValidName(null));
    }

    @Test
    void badNames_areQuotedShortAndPrintable() {
        String m = assertThrows(StoreException.class, () -> JobNamespace.requireValidName("a\0b/" + "y".repeat(300)))
                .getMessage();
        assertTrue(m.startsWith("bad job name 'a\\x00b/" + "y".repeat(60) + "...': it contains '/'"), m);
        assertTrue(m.length() < 300, m);
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
