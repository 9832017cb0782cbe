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

/**
 * A rank's environment asks glibc for huge pages and for freed memory kept for reuse, without replacing the
 * user's tunables; and glibc honours it.
 */
class RankMemoryTunablesTest {
    private static Map<String, String> envWith(String... kv) {
        Map<String, String> env = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            env.put(kv[i], kv[i + 1]);
        }
        RankLauncher.memoryTunables(env);
        return env;
    }

    @Test
    void theTunables_areSet_addedToTheUsers_neverReplacingTheirs_andLeftOutWhenTurnedOff() {
        String all = "glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1099511627776";
        assertEquals(all, envWith().get("GLIBC_TUNABLES"));
        assertEquals(all, envWith("GLIBC_TUNABLES", " ").get("GLIBC_TUNABLES"));
        assertEquals("glibc.malloc.arena_max=2:" + all,
                envWith("GLIBC_TUNABLES", "glibc.malloc.arena_max=2").get("GLIBC_TUNABLES"));
        assertEquals("glibc.malloc.hugetlb=0:glibc.malloc.trim_threshold=0:glibc.malloc.mmap_max=0",
                envWith("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0:glibc.malloc.trim_threshold=0").get("GLIBC_TUNABLES"),
                "the user's own choices stay, and only the others are added");
        for (String off : new String[] {"0", "off", "FALSE", "no"}) {
            assertFalse(envWith("TENPLEX_HUGEPAGES", off).containsKey("GLIBC_TUNABLES"), off);
        }
    }

    /** The pod launcher's ranks (tenplex.rank_env.with_memory_tunables) get the same environment, case by case. */
    @Test
    void thePodLaunchersRanks_getTheSameEnvironment() throws Exception {
        Path client = Path.of(System.getProperty("user.dir")).getParent().resolve("clients/python");
        String script = String.join("\n",
                "import sys; sys.path.insert(0, " + "'" + client + "')",
                "from tenplex.rank_env import with_memory_tunables as h",
                "for env in ({}, {'GLIBC_TUNABLES': ' '}, {'GLIBC_TUNABLES': 'glibc.malloc.arena_max=2'},",
                "            {'GLIBC_TUNABLES': 'glibc.malloc.hugetlb=0:glibc.malloc.trim_threshold=0'},",
                "            {'TENPLEX_HUGEPAGES': 'off'}):",
                "    print(h(env).get('GLIBC_TUNABLES'))");
        String[] want = {envWith().get("GLIBC_TUNABLES"), envWith("GLIBC_TUNABLES", " ").get("GLIBC_TUNABLES"),
            envWith("GLIBC_TUNABLES", "glibc.malloc.arena_max=2").get("GLIBC_TUNABLES"),
            envWith("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0:glibc.malloc.trim_threshold=0").get("GLIBC_TUNABLES"),
            "None"};
        assertEquals(String.join("\n", want), run(script, false));
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

    /**
     * A process started with it keeps 64 MiB it freed (its resident memory does not drop) and is given the
     * same memory back for the next allocation of that size; without it, glibc maps such an allocation
     * on its own and unmaps it when it is freed.
     */
    @Test
    void aProcessStartedWithIt_keepsWhatItFreed_forItsNextAllocation() throws Exception {
        String script = String.join("\n",
                "import ctypes",
                "libc = ctypes.CDLL(None)",
                "libc.malloc.restype = ctypes.c_void_p",
                "libc.free.argtypes = [ctypes.c_void_p]",
                "def rss():",
                "    return int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) << 10",
                "n = 64 << 20",
                "p = libc.malloc(n)",
                "ctypes.memset(p, 1, n)",
                "held = rss()",
                "libc.free(p)",
                "kept = rss() > held - n // 2",
                "print(kept, libc.malloc(n) == p)");
        assertEquals("True True", run(script, true));
        assertEquals("False", run(script, false).split(" ")[0], "without it, the freed memory goes back");
    }

    private static String run(String script, boolean advised) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("/usr/bin/python3", "-c", script).redirectErrorStream(true);
        pb.environment().remove("GLIBC_TUNABLES");
        if (advised) {
            RankLauncher.memoryTunables(pb.environment());
        }
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return out;
    }
}
