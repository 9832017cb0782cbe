package io.tenplex.datasets.rehearsal;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The rehearsal buffer B_n of one data-parallel rank: one {@link ClassMemory} per class, each of up to
 * S representatives, and the bytes they hold. Thread-safe (one lock per rank).
 */
public final class RankBuffer {
    /** What one offer did: candidates appended, candidates that replaced a representative, bytes added. */
    public record Offered(int appended, int replaced, long bytesAdded) {
    }

    private final ClassMemory[] memories;
    private final Random replace;
    private long bytes;

    public RankBuffer(RehearsalConfig config, int rank) {
        memories = new ClassMemory[config.classes()];
        for (int i = 0; i < memories.length; i++) {
            memories[i] = new ClassMemory(config.perClass());
        }
        replace = new Random(config.seed() * 1_000_003L + rank);
    }

    /**
     * Inserts every candidate into the memory of its class (Algorithm 1, lines 3 to 8).
     *
     * @throws IllegalArgumentException if a candidate's class is out of range (nothing is inserted)
     */
    public synchronized Offered offer(List<Sample> candidates) {
        for (Sample s : candidates) {
            checkClass(s.cls());
        }
        int appended = 0;
        long before = bytes;
        for (Sample s : candidates) {
            Sample old = memories[s.cls()].insert(s, replace);
            bytes += s.bytes() - (old == null ? 0 : old.bytes());
            appended += old == null ? 1 : 0;
        }
        return new Offered(appended, candidates.size() - appended, bytes - before);
    }

    /** The representatives per class (index: class). */
    public synchronized int[] counts() {
        int[] c = new int[memories.length];
        for (int i = 0; i < c.length; i++) {
            c[i] = memories[i].size();
        }
        return c;
    }

    /** The representative in {@code slot} of class {@code cls}, or null when there is none. */
    public synchronized Sample get(int cls, int slot) {
        return cls >= 0 && cls < memories.length ? memories[cls].get(slot) : null;
    }

    /** Every representative of class {@code cls}, in slot order. */
    public synchronized List<Sample> all(int cls) {
        return new ArrayList<>(memories[cls].all());
    }

    /** The bytes of the representatives held. */
    public synchronized long bytes() {
        return bytes;
    }

    public int classes() {
        return memories.length;
    }

    private void checkClass(int cls) {
        if (cls < 0 || cls >= memories.length) {
            throw new IllegalArgumentException("class " + cls + " out of range (expected: 0 <= class < "
                    + memories.length + ")");
        }
    }
}
