package io.tenplex.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The processes {@code tenplex run} launched for the ranks of a segment: start, wait for all, end all;
 * in live mode also by rank (a rank's process is kept across reconfigurations, ranks leave and join).
 */
final class Ranks {
    private final List<Process> running = new ArrayList<>();
    private final Map<Integer, Process> byRank = new TreeMap<>();

    /** Starts rank {@code rank}'s process (as {@link #start(ProcessBuilder)}), known by its rank. */
    Process start(int rank, ProcessBuilder pb) {
        Process p = start(pb);
        synchronized (running) {
            byRank.put(rank, p);
        }
        return p;
    }

    /** A rank whose process exited with an error, as {@code rank R (exit X)}, or null. */
    String failure() {
        synchronized (running) {
            for (Map.Entry<Integer, Process> e : byRank.entrySet()) {
                Process p = e.getValue();
                if (!p.isAlive() && p.exitValue() != 0) {
                    return "rank " + e.getKey() + " (exit " + p.exitValue() + ")";
                }
            }
        }
        return null;
    }

    /** Whether rank {@code rank} has a process that runs. */
    boolean has(int rank) {
        synchronized (running) {
            Process p = byRank.get(rank);
            return p != null && p.isAlive();
        }
    }

    /** The number of ranks whose process runs. */
    int alive() {
        return alive(Integer.MAX_VALUE);
    }

    /** The number of ranks below {@code world} whose process runs. */
    int alive(int world) {
        synchronized (running) {
            return (int) byRank.entrySet().stream().filter(e -> e.getKey() < world && e.getValue().isAlive()).count();
        }
    }

    /**
     * Waits up to {@code seconds} for the processes of ranks {@code from} and above to exit and forgets
     * them; what went wrong (a rank that exited with an error or did not exit, then ended), or null.
     */
    String leave(int from, long seconds) throws InterruptedException {
        List<Map.Entry<Integer, Process>> leaving;
        synchronized (running) {
            leaving = byRank.entrySet().stream().filter(e -> e.getKey() >= from).map(e -> Map.entry(e.getKey(), e.getValue())).toList();
        }
        long due = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        StringBuilder wrong = new StringBuilder();
        for (Map.Entry<Integer, Process> e : leaving) {
            Process p = e.getValue();
            if (!p.waitFor(Math.max(0, due - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                p.destroyForcibly();
                wrong.append(wrong.length() > 0 ? ", " : "").append("rank ").append(e.getKey())
                        .append(" did not exit within ").append(seconds).append(" s (ended)");
            } else if (p.exitValue() != 0) {
                wrong.append(wrong.length() > 0 ? ", " : "").append("rank ").append(e.getKey()).append(" exited with ")
                        .append(p.exitValue());
            }
            synchronized (running) {
                byRank.remove(e.getKey());
                running.remove(p);
            }
        }
        return wrong.length() > 0 ? wrong.toString() : null;
    }

    /** Starts a rank; a command that cannot be run is a one-line error that says what to give. */
    Process start(ProcessBuilder pb) {
        try {
            Process p = pb.start();
            synchronized (running) {
                running.add(p);
            }
            return p;
        } catch (IOException e) {
            String why = e.getMessage() != null && e.getMessage().contains("error=2") ? "no such file or directory"
                    : e.getMessage() != null && e.getMessage().contains("error=13") ? "permission denied" : String.valueOf(
                            e.getMessage());
            throw new IllegalArgumentException("cannot start the training command '" + pb.command().get(0) + "': " + why
                    + "; give an executable after --, e.g. -- /usr/bin/python3 train.py");
        }
    }

    /** Waits for every process; the first non-zero exit status (the others are then ended), or 0. */
    int waitForAll() throws InterruptedException {
        List<Process> ps;
        synchronized (running) {
            ps = List.copyOf(running);
        }
        int failed = 0;
        while (true) {
            boolean all = true;
            for (Process p : ps) {
                if (p.isAlive()) {
                    all = false;
                } else if (p.exitValue() != 0 && failed == 0) {
                    failed = p.exitValue();
                }
            }
            if (all || failed != 0) {
                break;
            }
            try {
                // wakes when any process ends; one that ended since the check above completes at once (a
                // filter on isAlive here could leave no futures, and anyOf of none never completes)
                CompletableFuture.anyOf(ps.stream().map(Process::onExit).toArray(CompletableFuture[]::new)).get();
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException(e.getCause());
            }
        }
        if (failed != 0) {
            killAll();
        }
        synchronized (running) {
            running.clear();
            byRank.clear();
        }
        return failed;
    }

    /** Ends every process (SIGTERM, then SIGKILL after 10 s) and forgets them. */
    void killAll() {
        List<Process> ps;
        synchronized (running) {
            ps = List.copyOf(running);
        }
        end(ps);
        synchronized (running) {
            running.removeAll(ps);
            byRank.values().removeAll(ps);
        }
    }

    /** Waits up to {@code seconds} for every process to exit (they were told to), then ends the others; forgets them. */
    void awaitAll(long seconds) throws InterruptedException {
        List<Process> ps;
        synchronized (running) {
            ps = List.copyOf(running);
        }
        long due = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        for (Process p : ps) {
            p.waitFor(Math.max(0, due - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
        killAll();
    }

    private static void end(List<Process> ps) {
        for (Process p : ps) {
            if (p.isAlive()) {
                p.destroy();
            }
        }
        for (Process p : ps) {
            try {
                if (!p.waitFor(10, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    boolean anyAlive() {
        synchronized (running) {
            return running.stream().anyMatch(Process::isAlive);
        }
    }
}
