package io.tenplex.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** The processes {@code tenplex run} launched for the ranks of a segment: start, wait for all, end all. */
final class Ranks {
    private final List<Process> running = new ArrayList<>();

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
        }
        return failed;
    }

    void killAll() {
        List<Process> ps;
        synchronized (running) {
            ps = List.copyOf(running);
        }
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
