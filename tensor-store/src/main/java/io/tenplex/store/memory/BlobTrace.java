package io.tenplex.store.memory;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Where each live blob of an allocator was allocated, kept only when the system property
 * {@code tenplex.store.traceBlobs} is true (the test suites set it): an allocator closed with memory
 * outstanding then names the code that allocated what leaked. Off, it records nothing.
 */
final class BlobTrace {
    static final boolean ON = Boolean.getBoolean("tenplex.store.traceBlobs");
    private static final int FRAMES = 14;
    private static final int SITES = 3;
    private final Map<BlobBacking.Memory, Throwable> live = Collections.synchronizedMap(new IdentityHashMap<>());

    void allocated(BlobBacking.Memory memory) {
        if (ON) {
            live.put(memory, new Throwable("allocated"));
        }
    }

    void released(BlobBacking.Memory memory) {
        if (ON) {
            live.remove(memory);
        }
    }

    /** The allocation sites of the live blobs, the most frequent first, or "" when not traced. */
    String sites() {
        if (!ON) {
            return "";
        }
        Map<String, Long> bySite;
        synchronized (live) {
            bySite = live.values().stream().collect(Collectors.groupingBy(BlobTrace::site, LinkedHashMap::new,
                    Collectors.counting()));
        }
        return bySite.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(SITES)
                .map(e -> "\n" + e.getValue() + " allocated at:" + e.getKey()).collect(Collectors.joining());
    }

    private static String site(Throwable t) {
        StringBuilder b = new StringBuilder();
        StackTraceElement[] frames = t.getStackTrace();
        for (int i = 0; i < Math.min(FRAMES, frames.length); i++) {
            b.append("\n\tat ").append(frames[i]);
        }
        return b.toString();
    }
}
