package io.tenplex.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The processes {@code tenplex run} launched for the ranks of a segment: start, wait for all, end all;
 * in live mode also by rank (a rank's process is kept across reconfigurations, ranks leave and join).
 */
final class Ranks {
    private final List<Process> running = new ArrayList<>();
    private final Map<Integer, Process> byRank = new TreeMap<>();
    /** Processes told to leave, ended by {@link #killAll()} if they have not exited by then. */
    private final List<Process> leaving = new ArrayList<>();

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
     * Lets the processes of ranks {@code from} and above go without waiting for them (they were told to
     * leave): they are no longer ranks of the run; {@code wrong} hears of one that exits with an error.
     * {@link #killAll()} still ends one that has not exited by then.
     */
    void release(int from, Consumer<String> wrong) {
        synchronized (running) {
            var it = byRank.entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<Integer, Process> e = it.next();
                if (e.getKey() < from) {
                    continue;
                }
                it.remove();
                running.remove(e.getValue());
                leaving.add(e.getValue());
                int rank = e.getKey();
                e.getValue().onExit().thenAccept(p -> {
                    if (p.exitValue() != 0) {
                        wrong.accept("rank " + rank + " exited with " + p.exitValue() + " after it was told to leave");
                    }
                });
            }
        }
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
            ps = new ArrayList<>(running);
            ps.addAll(leaving);
            leaving.clear();
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
