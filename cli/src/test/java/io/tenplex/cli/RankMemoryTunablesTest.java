package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** A rank's environment asks glibc for huge pages, without replacing the user's tunables; and glibc honours it. */
class RankMemoryTunablesTest {
    private static Map<String, String> envWith(String... kv) {
        Map<String, String> env = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            env.put(kv[i], kv[i + 1]);
        }
        RankMemoryTunables.apply(env);
        return env;
    }

    private static final String ALL = "glibc.malloc.hugetlb=1";

    /** Cases as (environment, the GLIBC_TUNABLES a rank gets, or null for none); Java and Python take each. */
    private static final String[][] CASES = {
        {"", ALL},
        {"GLIBC_TUNABLES= ", " :" + ALL}, // a segment without '=' is nothing to glibc: ours still applies
        {"GLIBC_TUNABLES=glibc.malloc.arena_max=2", "glibc.malloc.arena_max=2:" + ALL},
        {"GLIBC_TUNABLES=glibc.malloc.hugetlb=0:glibc.malloc.trim_threshold=0",
            "glibc.malloc.hugetlb=0:glibc.malloc.trim_threshold=0"},
        {"GLIBC_TUNABLES=glibc.malloc.hugetlb:glibc.malloc.mmap_threshold=65536",
            "glibc.malloc.hugetlb:glibc.malloc.mmap_threshold=65536:" + ALL},
        {"GLIBC_TUNABLES=glibc.malloc.hugetlb =0::", "glibc.malloc.hugetlb =0:::" + ALL},
        {"MALLOC_TRIM_THRESHOLD_=0", ALL},
        {"TENPLEX_HUGEPAGES= Off\t", null},
        {"TENPLEX_HUGEPAGES=\u00a00", ALL}, // not a word Java or Python reads as off
    };

    private static Map<String, String> env(String c) {
        Map<String, String> env = new HashMap<>();
        for (String kv : c.isEmpty() ? new String[0] : c.split("\n")) {
            env.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        }
        return env;
    }

    @Test
    void theTunables_areAddedToTheUsers_unlessTheyDecidedThem_andLeftOutWhenTurnedOff() {
        for (String[] c : CASES) {
            Map<String, String> env = env(c[0]);
            RankMemoryTunables.apply(env);
            assertEquals(c[1], env.get("GLIBC_TUNABLES"), c[0]);
        }
        for (String off : new String[] {"0", "off", "FALSE", "no"}) {
            assertFalse(envWith("TENPLEX_HUGEPAGES", off).containsKey("GLIBC_TUNABLES"), off);
        }
    }

    /** The pod launcher's ranks (tenplex.rank_env.with_memory_tunables) get the same environment, case by case. */
    @Test
    void thePodLaunchersRanks_getTheSameEnvironment() throws Exception {
        Path client = Path.of(System.getProperty("user.dir")).getParent().resolve("clients/python");
        StringBuilder cases = new StringBuilder();
        StringBuilder want = new StringBuilder();
        for (String[] c : CASES) {
            cases.append("    {").append(pyDict(env(c[0]))).append("},\n");
            Map<String, String> env = env(c[0]);
            RankMemoryTunables.apply(env);
            want.append(env.get("GLIBC_TUNABLES") == null ? "None" : env.get("GLIBC_TUNABLES")).append('\n');
        }
        String script = "import sys; sys.path.insert(0, '" + client + "')\n"
                + "from tenplex.rank_env import with_memory_tunables as h\n"
                + "for env in (\n" + cases + "):\n"
                + "    print(h(env).get('GLIBC_TUNABLES'))\n";
        assertEquals(want.toString().strip(), run(script, false));
    }

    private static String pyDict(Map<String, String> env) {
        StringBuilder b = new StringBuilder();
        env.forEach((k, v) -> b.append('\'').append(k).append("': '").append(v.replace("\t", "\\t")
                .replace("\u00a0", "\\u00a0")).append("', "));
        return b.toString();
    }

    /**
     * A Python process started with that environment has its large allocations advised huge pages (smaps
     * "hg"). glibc advises only where the kernel leaves huge pages to advice ({@code [madvise]}; with
     * {@code [always]} there is nothing to ask), as on the machines this runs on.
     */
    @Test
    void aProcessStartedWithIt_getsHugePagesAdvisedForItsLargeAllocations() throws Exception {
        Path mode = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
        Assumptions.assumeTrue(Files.isReadable(mode) && Files.readString(mode).contains("[madvise]"),
                "transparent huge pages are not left to advice here");
        String script = String.join("\n",
                "import ctypes",
                "libc = ctypes.CDLL(None)",
                "libc.malloc.restype = ctypes.c_void_p",
                "p = libc.malloc(64 << 20) + (4 << 20)",
                "for line in open('/proc/self/smaps'):",
                "    head = line.split()",
                "    if '-' in head[0] and not head[0].endswith(':'):",
                "        lo, hi = (int(x, 16) for x in head[0].split('-'))",
                "        hit = lo <= p < hi",
                "    elif hit and head[0] == 'VmFlags:':",
                "        print('hg' in head[1:])",
                "        break");
        assertEquals("True", run(script, true));
        assertEquals("False", run(script, false), "without it, malloc does not advise huge pages");
    }

    private static String run(String script, boolean advised) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("/usr/bin/python3", "-c", script).redirectErrorStream(true);
        pb.environment().remove("GLIBC_TUNABLES");
        if (advised) {
            RankMemoryTunables.apply(pb.environment());
        }
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return out;
    }
}
