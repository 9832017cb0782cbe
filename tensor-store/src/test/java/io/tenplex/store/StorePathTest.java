package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class StorePathTest {

    @Test
    void parse_dropsEmptyComponents_andChildIsTheParsedLongerPath() {
        StorePath p = StorePath.parse("//job/x//iter/");
        assertEquals(List.of("job", "x", "iter"), p.parts());
        assertEquals("/job/x/iter", p.toString());
        StorePath c = p.child("t0001.meta");
        assertEquals(StorePath.parse("/job/x/iter/t0001.meta"), c);
        assertEquals(StorePath.parse("/job/x/iter/t0001.meta").hashCode(), c.hashCode());
        assertEquals(StorePath.parse("/a"), StorePath.root().child("a"));
        assertEquals(StorePath.parse("/job/x/a/b"), StorePath.parse("job/x").child("a/b"), "a name with a slash");
        assertEquals(p, p.child(""), "an empty name adds nothing, as parsing drops it");
        assertTrue(StorePath.parse("/").isRoot());
    }

    @Test
    void childAndParse_refuseTheSameComponents() {
        StorePath p = StorePath.parse("/job");
        for (String bad : List.of(".", "..", "a\0b", "é".repeat(128), "€".repeat(86), "x".repeat(256))) {
            StoreException fromChild = assertThrows(StoreException.class, () -> p.child(bad), bad);
            assertThrows(StoreException.class, () -> StorePath.parse("/job/" + bad), bad);
            assertTrue(fromChild.getMessage().contains("relative") || fromChild.getMessage().contains("NUL")
                    || fromChild.getMessage().contains("255 bytes"), fromChild.getMessage());
        }
        // at the limit: 255 bytes in 85 three-byte characters, 127 two-byte ones and one more byte
        for (String ok : List.of("€".repeat(85), "é".repeat(127) + "a", "x".repeat(255), "...", ".a")) {
            assertEquals(StorePath.parse("/job/" + ok), p.child(ok), ok);
        }
        assertTrue(assertThrows(StoreException.class, () -> p.child(".."))
                .getMessage().contains("'/job/..'"), "the message names the whole path");
    }

    @Test
    void aPathOfMoreComponentsThanPathMaxHolds_isRefused_byEveryWayOfMakingOne() {
        String deepest = "/a".repeat(StorePath.MAX_DEPTH);
        StorePath atLimit = StorePath.parse(deepest);
        assertEquals(StorePath.MAX_DEPTH, atLimit.parts().size());
        for (org.junit.jupiter.api.function.Executable tooDeep : List.<org.junit.jupiter.api.function.Executable>of(
                () -> StorePath.parse(deepest + "/b"),
                () -> StorePath.parse("/a".repeat(100_000)),
                () -> atLimit.child("b"),
                () -> atLimit.child("b/c"),
                () -> StorePath.parse("/x").resolve(atLimit))) {
            StoreException e = assertThrows(StoreException.class, tooDeep);
            assertTrue(e.getMessage().contains("more than 2048 components"), e.getMessage());
            assertTrue(e.getMessage().length() < 200, "the message quotes the path's start only");
        }
        assertEquals(StorePath.MAX_DEPTH, atLimit.parent().child("b").parts().size());
    }
}
