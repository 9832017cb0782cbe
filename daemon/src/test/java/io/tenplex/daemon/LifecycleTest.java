package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LifecycleTest {
    private final List<String> events = new ArrayList<>();

    /** A component that records its start and its close. */
    private AutoCloseable component(String name) {
        events.add("start " + name);
        return () -> events.add("close " + name);
    }

    @Test
    void close_closesInReverseStartOrder() throws Exception {
        Lifecycle life = new Lifecycle();
        life.add("store", component("store"));
        life.start("rest", () -> component("rest"));
        life.add("fuse", "handle", () -> events.add("close fuse"));
        assertEquals(List.of("store", "rest", "fuse"), life.names());
        life.close();
        assertEquals(List.of("start store", "start rest", "close fuse", "close rest", "close store"), events);
    }

    @Test
    void failingStart_closesWhatStarted_andRethrows() {
        Lifecycle life = new Lifecycle();
        life.add("store", component("store"));
        life.add("peers", component("peers"));
        IOException e = assertThrows(IOException.class, () -> life.start("fuse", () -> {
            throw new IOException("no /dev/fuse");
        }));
        assertEquals("no /dev/fuse", e.getMessage());
        assertEquals(List.of("start store", "start peers", "close peers", "close store"), events);
        assertThrows(IllegalStateException.class, () -> life.add("late", component("late")));
    }

    @Test
    void close_isIdempotent() {
        Lifecycle life = new Lifecycle();
        life.add("store", component("store"));
        life.close();
        life.close();
        assertEquals(List.of("start store", "close store"), events);
    }

    @Test
    void failingClose_doesNotSkipTheOthers() {
        Lifecycle life = new Lifecycle();
        life.add("store", component("store"));
        life.add("broken", () -> {
            throw new IllegalStateException("cannot close");
        });
        life.add("error", () -> {
            throw new AssertionError("worse");
        });
        life.add("rest", component("rest"));
        life.close();
        assertEquals(List.of("start store", "start rest", "close rest", "close store"), events);
    }

    @Test
    void add_returnsTheComponent() {
        Lifecycle life = new Lifecycle();
        AutoCloseable c = component("x");
        assertSame(c, life.add("x", c));
        life.close();
    }
}
