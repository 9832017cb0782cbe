package io.tenplex.datasets.streams;

import java.util.Iterator;
import java.util.LinkedHashSet;

/**
 * The producer-chosen ids of the samples a rank's buffer stored lately, so that a push retried
 * with the same id (its producer never learnt that the first one was stored: it gave up, or its
 * answer was lost) is not stored twice. Remembers the last {@link #REMEMBERED} ids; not
 * thread-safe ({@link RankBuffer} serialises calls).
 */
final class PushIds {
    /** How many stored pushes' ids a rank's buffer remembers: a retry must come within as many pushes. */
    static final int REMEMBERED = 16_384;
    /** The longest id a producer may choose. */
    static final int MAX_CHARS = 128;

    private final LinkedHashSet<String> stored = new LinkedHashSet<>();

    /** Checks a producer's id (null: none, the push is not deduplicated). */
    static String check(String id) {
        if (id != null && (id.isEmpty() || id.length() > MAX_CHARS)) {
            throw new IllegalArgumentException("sample id of " + id.length() + " characters (expected: 1 to "
                    + MAX_CHARS + ")");
        }
        return id;
    }

    /** Whether a sample with this id (not null) was stored lately. */
    boolean stored(String id) {
        return id != null && stored.contains(id);
    }

    /** Notes that the sample with this id (null: none) was stored. */
    void remember(String id) {
        if (id == null || !stored.add(id) || stored.size() <= REMEMBERED) {
            return;
        }
        Iterator<String> oldest = stored.iterator();
        oldest.next();
        oldest.remove();
    }
}
