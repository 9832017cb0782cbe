package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.ParallelConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * The summary {@code tenplex run --live} prints at its end: a line per change, a committed one with its
 * downtime split as the ranks reported it by then and how it ended ({@code live} or {@code relaunched:
 * <why>}), one that did not commit with why; the run's exit status follows from the schedule.
 */
final class LiveSummary {
    private final RunCli run;
    private final List<Supplier<String>> lines = new ArrayList<>();
    private final Downtimes downtimes;
    /**
     * How the last committed change ended ({@code live} or {@code relaunched: <why>}): a handover whose
     * new group then does not form becomes a relaunch ({@link #relaunched}).
     */
    private String[] lastHow = {""};

    LiveSummary(RunCli run, long start) {
        this.run = run;
        this.downtimes = new Downtimes(run.t, line -> run.log(start, line));
    }

    /** A change that did not commit: its line. */
    void failed(String line) {
        lines.add(() -> line);
    }

    /** A committed change from {@code before} to {@code after}, ended {@code how}. */
    void committed(String change, JsonNode status, ParallelConfig before, ParallelConfig after, String how) {
        String[] said = {how};
        lastHow = said;
        String path = run.layout().apiResourceChange(change);
        Downtimes.Finished f = new Downtimes.Finished(String.format(Locale.ROOT, "step %s: %s -> %s, ",
                status.path("generation").asText(), before, after), path, status);
        downtimes.watch(path, status.path("generation").asText());
        lines.add(() -> f.head() + Downtimes.report(f.now(run.t)) + ", " + said[0]);
    }

    /** The last handover's group did not form ({@code why}): the change ended in a relaunch. */
    void relaunched(String why) {
        if (lastHow[0].equals("live")) {
            lastHow[0] = "relaunched: " + why;
        }
    }

    /** Prints the summary; the run's exit status ({@link RunCli#scheduleApplied}). */
    int finish() throws InterruptedException {
        downtimes.close();
        List<String> out = lines.stream().map(Supplier::get).toList();
        run.out.println("tenplex run: " + out.stream().filter(l -> l.startsWith("step ")).count() + " reconfiguration(s)");
        out.forEach(l -> run.out.println("  " + l));
        return run.scheduleApplied();
    }
}
