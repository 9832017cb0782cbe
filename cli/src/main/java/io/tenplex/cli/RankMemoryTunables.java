package io.tenplex.cli;

import java.util.List;
import java.util.Map;

/**
 * The glibc tunable a rank's process starts with (glibc 2.35 and later; older ones ignore what they do
 * not know): malloc asks for transparent huge pages for its memory ({@code hugetlb=1}). A trainer's
 * tensors then take a fault and a TLB entry per 2 MiB instead of per 4 KiB where the kernel leaves huge
 * pages to advice: on a virtual machine a steady step ran several times faster (docs/BENCHMARKS.md,
 * "Page costs"). No byte changes. Keeping freed memory in malloc's heap as well ({@code mmap_max=0},
 * a large {@code trim_threshold}) was measured and left out: it made the large model's reconfigurations
 * slower (docs/DECISIONS.md). Python's {@code tenplex.rank_env.with_memory_tunables} does the same for
 * the pod launcher's ranks.
 */
final class RankMemoryTunables {
    /** The tunable a rank starts with, and its key. */
    static final String SETTING = "glibc.malloc.hugetlb=1";
    private static final String KEY = "glibc.malloc.hugetlb";

    private RankMemoryTunables() {
    }

    /**
     * Adds {@link #SETTING} to {@code env}'s {@code GLIBC_TUNABLES} unless the user set that tunable
     * there (keys read as glibc reads them). The user's string is kept as it is, ours appended.
     * {@code TENPLEX_HUGEPAGES=0} (or off, false, no) leaves it out.
     */
    static void apply(Map<String, String> env) {
        String off = asciiStrip(env.getOrDefault("TENPLEX_HUGEPAGES", "1")).toLowerCase(java.util.Locale.ROOT);
        if (List.of("0", "off", "false", "no").contains(off)) {
            return;
        }
        String t = env.getOrDefault("GLIBC_TUNABLES", "");
        for (String kv : t.split(":", -1)) {
            int eq = kv.indexOf('=');
            if (eq >= 0 && kv.substring(0, eq).equals(KEY)) { // keys as written; a segment without '=' is nothing
                return;
            }
        }
        env.put("GLIBC_TUNABLES", t.isEmpty() ? SETTING : t + ":" + SETTING);
    }

    /** {@code s} without ASCII whitespace at either end (as Python's {@code strip(" \t\n\r\x0b\x0c")}). */
    private static String asciiStrip(String s) {
        return s.replaceAll("^[ \\t\\n\\r\\x0B\\f]+|[ \\t\\n\\r\\x0B\\f]+$", "");
    }
}
