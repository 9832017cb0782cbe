package io.tenplex.store.memory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * Identifies a process on this host across pid reuse: its pid and its start time (field 22 of
 * {@code /proc/<pid>/stat}, clock ticks since boot). Owners of shared memory are checked this way:
 * a pid whose start time differs is another process.
 */
public final class ProcessStart {
    private ProcessStart() {
    }

    /** This process's start time. */
    public static long self() {
        return of(ProcessHandle.current().pid()).orElse(0L);
    }

    /** The start time of {@code pid}, or empty when no such process is visible here. */
    public static OptionalLong of(long pid) {
        if (pid <= 0) {
            return OptionalLong.empty();
        }
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return OptionalLong.of(Long.parseLong(f[19]));
        } catch (IOException | RuntimeException e) {
            return OptionalLong.empty();
        }
    }

    /** Whether the process {@code pid} that started at {@code start} is still running. */
    public static boolean alive(long pid, long start) {
        OptionalLong s = of(pid);
        return s.isPresent() && s.getAsLong() == start;
    }
}
