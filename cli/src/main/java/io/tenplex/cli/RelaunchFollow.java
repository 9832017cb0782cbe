package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.adapters.Parallelizer;
import io.tenplex.adapters.Schedule;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code tenplex run} without {@code --live}: follows the schedule segment by segment. Each segment's
 * ranks run under one configuration while the next entry is posted; once they have exited (having
 * saved for the change) and the change has ended, the next segment relaunches every rank under the
 * committed configuration. At the end it prints each reconfiguration with its downtime.
 */
final class RelaunchFollow {
    private final RunCli run;
    /** The pending change's events, printed as they happen. */
    private ChangeEvents events;
    /** Why the ranks ended without saving for the pending change (read before it was cancelled), or null. */
    private String notStopped;

    RelaunchFollow(RunCli run) {
        this.run = run;
    }

    /** Runs segment after segment of the schedule; the exit status. */
    int follow(Schedule s, int perWorker, Parallelizer parallelizer, long start) throws Exception {
        Resume from = Resume.of(run, s, perWorker, parallelizer, start);
        ParallelConfig config = from.config();
        List<Downtimes.Finished> summary = new ArrayList<>();
        run.downtimes = new Downtimes(run.t, line -> run.log(start, line));
        for (int i = from.next() - 1; ; i++) {
            Schedule.Entry next = i + 1 < s.entries().size() ? s.entries().get(i + 1) : null;
            java.util.Set<String> known = run.daemon.changeIds();
            String change = segment(start, config, perWorker, i, next);
            int failed = run.waitWithRestarts(start, config, perWorker, i);
            if (failed != 0) {
                run.log(start, "a training process failed (exit " + failed + "); stopping");
                run.daemon.cancel(change);
                run.pendingChange = null;
                return 1;
            }
            change = next == null ? run.daemon.newChange(known, line -> run.log(start, line)) : change;
            if (change == null) { // the end of the schedule (no tenplex resize came), or its stop entry
                ended(s, start, next);
                break;
            }
            JsonNode status = finish(start, change, next);
            run.pendingChange = null;
            if (List.of("failed", "cancelled").contains(status.path("state").asText()) && status.path("generation").isNull()) {
                run.log(start, "the job ended before " + (next != null ? next.when() : "resource change " + change) + ": "
                        + status.path("error").asText());
                if (next != null) {
                    run.notApplied(s, next, notStopped != null ? notStopped : status.path("error").asText());
                }
                break;
            }
            if (!status.path("state").asText().equals("done")) {
                run.log(start, "the resource change failed: " + status.path("error").asText());
                return 1;
            }
            ParallelConfig before = config;
            config = ParallelConfigJson.parse(status.path("config"), "config ");
            perWorker = next != null ? perWorker : JobOnDaemon.devicesPerWorker(status, perWorker);
            summary.add(new Downtimes.Finished(String.format(Locale.ROOT, "step %s: %s -> %s, ", status.path(
                    "generation").asText(), before, config), run.layout().apiResourceChange(change), status));
            run.downtimes.watch(run.layout().apiResourceChange(change), status.path("generation").asText());
        }
        run.downtimes.close();
        run.out.println("tenplex run: " + summary.size() + " reconfiguration(s)");
        summary.forEach(f -> run.out.println("  " + f.head() + Downtimes.report(f.now(run.t))));
        return run.scheduleApplied();
    }

    /** The job ended: at the end of the schedule, or at its stop entry (not applied when no rank asked the flag). */
    private void ended(Schedule s, long start, Schedule.Entry next) throws Exception {
        JobOnDaemon.NotStopped unasked = next == null ? null : run.daemon.whyNotStopped(next);
        run.end(start, next);
        if (unasked != null && unasked.neverAsked()) { // it may have trained past the stop
            run.notApplied(s, next, unasked.why());
        }
    }

    /** Launches one segment under {@code config} and posts the next entry; the resource change's id, or null. */
    private String segment(long start, ParallelConfig config, int perWorker, int i, Schedule.Entry next)
            throws IOException, InterruptedException {
        List<Device> devices = Ptc.packedDevices(config.worldSize(), perWorker);
        run.log(start, "launching " + config.worldSize() + " processes under " + config + " on "
                + RunCli.workers(devices) + " worker(s)");
        run.launch(config, devices, i);
        if (next == null) {
            return null;
        }
        if (!next.byStep()) {
            run.waitUntil(start, next.minutes());
        }
        String change = run.daemon.post(next, config, perWorker, run.paraConfig, line -> run.log(start, line));
        run.pendingChange = change;
        if (change != null) {
            events = new ChangeEvents(run.t, run.layout().apiResourceChange(change), line -> run.log(start, line)).start();
        }
        run.log(start, "at " + next.when() + ": " + (next.stops() ? "stop" : "change to " + next.size()
                + " devices" + (next.config() != null ? " as " + next.config() : "")) + (change != null
                ? " (resource change " + change + ")" : ""));
        Prestarted.forNext(run, next, change, i + 1, start);
        return change;
    }

    /**
     * Follows a resource change to its end (cancelling it when the job ended without saving for it); its
     * events are printed as they happen ({@link ChangeEvents}, from the moment it was posted).
     */
    private JsonNode finish(long start, String change, Schedule.Entry next) throws Exception {
        ChangeEvents ev = events != null ? events : new ChangeEvents(run.t, run.layout().apiResourceChange(change),
                line -> run.log(start, line));
        events = null;
        JsonNode s = ev.stopAndRead();
        notStopped = null;
        if (s.path("state").asText().equals("stopping")) {
            notStopped = run.daemon.whyNotStopped(next).why();
            run.daemon.cancel(change); // every process has exited: no save for this change is coming after this point
        }
        while (s.path("state").asText().equals("reconfiguring") || s.path("state").asText().equals("stopping")) {
            Thread.sleep(ChangeEvents.POLL_MILLIS); // polling the daemon for new events, not waiting for a result
            s = ev.read();
        }
        return s;
    }
}
