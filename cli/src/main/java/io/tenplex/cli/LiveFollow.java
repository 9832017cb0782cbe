package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.adapters.Parallelizer;
import io.tenplex.adapters.Schedule;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.util.List;

/**
 * {@code tenplex run --live}: follows the schedule keeping the ranks' processes (docs/LIVE.md). At each
 * change it waits for the daemon's commit while the ranks save and wait in the run's store, then hands
 * them their new role: the kept ranks form the new group in place, added ranks are started, removed
 * ones leave (exit 0). A change that fails (nothing commits) leaves the ranks in place under their
 * configuration, from the job's last complete generation. A rank that exits with an error, a group that
 * does not form or a rank whose worker changes makes every rank relaunch instead (from the committed
 * generation, or from the last complete one when the change did not commit), once per segment, saying why.
 */
final class LiveFollow {
    /** How often the change's status and the ranks are looked at while a change runs. */
    private static final long POLL_MILLIS = 25;
    /** How long the ranks told to leave or to exit for a relaunch have before they are ended. */
    private static final long EXIT_SECONDS = 60;
    /** How long a change may stay waiting for saves after a rank failed and every other rank waits. */
    private static final long STALLED_NANOS = 2_000_000_000L;

    private final RunCli run;
    /** The summary printed at the end. */
    private LiveSummary summary;
    /** The configuration the ranks run under. */
    private ParallelConfig config;
    /** Whether this segment's ranks were already relaunched after a failure (a second failure is not retried here). */
    private boolean fellBack;
    /** The daemon's id of the change the roles now handed out are for (null at a stop entry). */
    private String changeId;
    /** Why the ranks ended without saving for the pending change (read before it was cancelled), or null. */
    private String notStopped;
    /** The schedule followed. */
    private Schedule schedule;
    /**
     * Whether the last change is posted again: it did not commit because a rank failed, and every rank
     * was relaunched under the configuration before it (once per entry: {@code reposted}).
     */
    private boolean repost;
    private boolean reposted;

    LiveFollow(RunCli run) {
        this.run = run;
    }

    int follow(Schedule s, int perWorker, Parallelizer parallelizer, long start) throws Exception {
        schedule = s;
        Resume from = Resume.of(run, s, perWorker, parallelizer, start);
        config = from.config();
        summary = new LiveSummary(run, start);
        launchAll(start, config, perWorker, 0, "launching");
        int entry = from.next(); // the schedule's entry to post next
        for (int i = 0; ; i++) {
            if (!formed(start, perWorker, i)) {
                return 1;
            }
            Schedule.Entry next = entry < s.entries().size() ? s.entries().get(entry) : null;
            if (next == null) {
                return last(start, config, perWorker, i);
            }
            if (run.running.alive() == 0) { // every rank exited 0 and no group formed: a script without tenplex.elastic
                return endedUnformed(start, next);
            }
            if (!next.byStep()) {
                run.waitUntil(start, next.minutes());
            }
            String change = run.daemon.post(next, config, perWorker, run.paraConfig, line -> run.log(start, line));
            int n = ++run.posted;
            run.pendingChange = change;
            run.log(start, "at " + next.when() + ": " + (next.stops() ? "stop" : "change to " + next.size() + " devices"
                    + (next.config() != null ? " as " + next.config() : "")) + (change != null ? " (resource change "
                    + change + ", live reconfiguration " + n + ")" : ""));
            if (change == null) {
                stop(start, n, next);
                return summary.finish();
            }
            if (change != null && next.size() > config.worldSize()) {
                startAhead(start, n, next.size(), perWorker);
            }
            Integer status = change(start, change, n, next, perWorker, i + 1);
            if (status != null) {
                return status;
            }
            entry += repost ? 0 : 1;
            reposted = repost;
        }
    }

    private int endedUnformed(long start, Schedule.Entry next) throws java.io.IOException, InterruptedException {
        run.end(start, null);
        run.notApplied(schedule, next, "the ranks ended without forming the live process group " + run.launcher.prefix
                + ": does the script use tenplex.elastic (docs/LIVE.md)?");
        return summary.finish();
    }

    /** Follows change {@code n} to its end and hands over or relaunches; an exit status, or null to go on. */
    private Integer change(long start, String change, int n, Schedule.Entry next, int perWorker, int segment)
            throws Exception {
        changeId = change;
        ChangeEvents ev = new ChangeEvents(run.t, run.layout().apiResourceChange(change), line -> run.log(start, line));
        notStopped = null;
        String failure = watch(start, ev, change, n, next);
        JsonNode status = ev.read();
        while (status.path("state").asText().equals("reconfiguring")) {
            Thread.sleep(POLL_MILLIS);
            status = ev.read();
        }
        run.pendingChange = null;
        String state = status.path("state").asText();
        if (failure == null && run.running.failure() != null) { // failed after the change left "stopping"
            failure = run.running.failure() + " exited with an error during live reconfiguration " + n;
            run.log(start, failure);
        }
        if (failure == null && run.running.alive(config.worldSize()) == 0 && !state.equals("done")) {
            return ended(start, n, next, status);
        }
        return settle(start, change, n, next, perWorker, segment, status, failure);
    }

    /**
     * Change {@code n} ended ({@code status}; {@code failure}: what went wrong with a rank, or null): the
     * ranks continue in place, are handed over to the new configuration, or are all relaunched; a change
     * that did not commit because a rank failed is posted again once ({@link #repost}). An exit status, or
     * null to go on.
     */
    private Integer settle(long start, String change, int n, Schedule.Entry next, int perWorker, int segment,
            JsonNode status, String failure) throws Exception {
        String state = status.path("state").asText();
        ParallelConfig before = config;
        if (state.equals("done")) {
            config = ParallelConfigJson.parse(status.path("config"), "config ");
        }
        String failed = state.equals("done") ? null : "the resource change " + state + ": "
                + status.path("error").asText("no reason given");
        String why = failure != null ? failure : failed != null ? null
                : LiveRoles.cannotContinue(Ptc.packedDevices(before.worldSize(), perWorker),
                        Ptc.packedDevices(config.worldSize(), perWorker));
        repost = failed != null && failure != null && why != null && !reposted;
        if (failed != null && !repost) {
            run.notApplied.add(RunCli.what(next) + ": " + failed);
        }
        if (failed != null && why == null) {
            run.log(start, "live: " + failed + "; the ranks continue in place under " + before + " from "
                    + run.daemon.lastGeneration() + " (the job's last complete generation)");
        }
        if (why != null && fellBack && failure != null) {
            run.log(start, failure + " again after a relaunch in this segment; stopping (the job can resume from "
                    + run.daemon.lastGeneration() + ")");
            return 1;
        }
        if (why == null) {
            handover(start, n, before, config, perWorker, segment);
        } else {
            relaunch(start, n, config, perWorker, segment, why);
        }
        String how = why == null ? "live" : "relaunched: " + why;
        if (repost) {
            run.log(start, "live: the change at " + next.when() + " is posted again for the relaunched ranks");
        }
        if (failed != null) {
            summary.failed("at " + next.when() + ": not reconfigured (" + failed + "), " + (why == null
                    ? "continued in place under " + before : how) + (repost ? "; posted again" : ""));
        } else {
            summary.committed(change, status, before, config, how);
        }
        return null;
    }

    /** The job ended before the change's step: ranks started ahead leave. */
    private int ended(long start, int n, Schedule.Entry next, JsonNode status) throws Exception {
        tell(n, LiveRoles.leave("the job ended before " + next.when()));
        run.running.awaitAll(EXIT_SECONDS);
        run.log(start, "the job ended before " + next.when() + (status.path("error").isMissingNode() ? ""
                : ": " + status.path("error").asText()));
        run.notApplied(schedule, next, notStopped != null ? notStopped : status.path("error").asText("the ranks ended"));
        return summary.finish();
    }

    /** The last segment: waits for every rank; a failure before its group formed relaunches every rank once. */
    private int last(long start, ParallelConfig config, int perWorker, int i) throws Exception {
        while (true) {
            int failed = run.running.waitForAll();
            if (failed == 0) {
                run.end(start, null);
                return summary.finish();
            }
            if (!fellBack && !groupFormed()) {
                relaunchFresh(start, config, perWorker, i, "a rank exited with " + failed + " before the process group "
                        + run.launcher.prefix + " formed");
                continue;
            }
            int restarted = run.waitWithRestarts(start, config, perWorker, i);
            if (restarted != 0) {
                run.log(start, "a training process failed (exit " + failed + "); stopping");
                return 1;
            }
            run.end(start, null);
            return summary.finish();
        }
    }

    /**
     * Waits until the ranks of segment {@code i} have formed their process group; when one fails first
     * or it takes longer than the regroup timeout (plus a minute to start), every rank is relaunched,
     * once. Whether the group formed.
     */
    private boolean formed(long start, int perWorker, int i) throws Exception {
        String why = awaitGroup();
        if (why == null) {
            return true;
        }
        if (!fellBack) {
            summary.relaunched(why); // the handover's group did not form: the change ended in a relaunch
            relaunchFresh(start, config, perWorker, i, why);
            why = awaitGroup();
            if (why == null) {
                return true;
            }
        }
        run.log(start, why + " after a relaunch; stopping (the job can resume from " + run.daemon.lastGeneration() + ")");
        return false;
    }

    private String awaitGroup() throws Exception {
        String group = run.launcher.prefix;
        long due = System.nanoTime() + (run.regroupTimeout + 60) * 1_000_000_000L;
        while (!groupFormed()) {
            String failure = run.running.failure();
            if (failure != null) {
                return failure + " exited with an error before the process group " + group + " formed";
            }
            if (run.running.alive() == 0) {
                return null; // every rank ended well: no group is coming (the caller tells the job ended)
            }
            if (System.nanoTime() > due) {
                return "the process group " + group + " did not form within " + (run.regroupTimeout + 60) + " s";
            }
            Thread.sleep(POLL_MILLIS);
        }
        return null;
    }

    private boolean groupFormed() {
        try {
            return run.store.count(LiveRoles.regrouped(run.launcher.prefix)) >= run.launcher.prefixWorld;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    /**
     * Waits for the change to leave "stopping" (saved and moving, or failed), watching the ranks: a rank
     * that exits with an error is noted; when no rank can save any more (all exited, or the group never
     * formed, or every live rank waits and the change has not moved for a while) the change is cancelled.
     * What went wrong with a rank, or null.
     */
    private String watch(long start, ChangeEvents ev, String change, int n, Schedule.Entry next) throws Exception {
        String failure = null;
        long stalledSince = 0;
        while (true) {
            String state = ev.read().path("state").asText();
            if (!state.equals("stopping")) {
                return failure;
            }
            if (failure == null && (failure = run.running.failure()) != null) {
                failure = failure + " exited with an error during live reconfiguration " + n;
                run.log(start, failure + "; waiting for the change's outcome");
                if (!groupFormed()) {
                    run.log(start, "the process group " + run.launcher.prefix + " never formed: no rank can save; ending them");
                    run.running.killAll();
                }
            }
            int alive = run.running.alive();
            boolean allWait = failure != null && run.store.count(LiveRoles.waiting(n)) >= alive;
            stalledSince = allWait ? (stalledSince == 0 ? System.nanoTime() : stalledSince) : 0;
            if (run.running.alive(config.worldSize()) == 0 || (stalledSince != 0 && System.nanoTime() - stalledSince > STALLED_NANOS)) {
                if (notStopped == null && run.running.alive(config.worldSize()) == 0) {
                    notStopped = run.daemon.whyNotStopped(next).why();
                }
                run.daemon.cancel(change); // no save for this change is coming
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /**
     * Starts the ranks the next entry adds when its change is posted, so that their interpreters start
     * (and import torch) while the others train, save and the daemon reconfigures; they wait for the
     * role like the others (with a provisional data-parallel configuration meanwhile).
     */
    private void startAhead(long start, int n, int size, int perWorker) throws Exception {
        run.log(start, "live: starting ranks " + config.worldSize() + "-" + (size - 1) + " ahead of the commit");
        run.launcher.waitFor = n;
        try {
            run.launcher.launch(ParallelConfig.of(1, 1, size), Ptc.packedDevices(size, perWorker), 0,
                    config.worldSize(), LiveRoles.key(n) + "/group");
        } finally {
            run.launcher.waitFor = 0;
        }
    }

    /** The kept ranks continue in place; added ranks start (unless started ahead); removed ranks leave. */
    private void handover(long start, int n, ParallelConfig before, ParallelConfig after, int perWorker, int segment)
            throws Exception {
        List<Device> devices = Ptc.packedDevices(after.worldSize(), perWorker);
        String group = LiveRoles.key(n) + "/group";
        int kept = Math.min(before.worldSize(), after.worldSize());
        tell(n, LiveRoles.role(after, devices, group, segment));
        run.launcher.prefix = group;
        run.launcher.prefixWorld = after.worldSize();
        fellBack = false;
        boolean ahead = after.worldSize() > kept && java.util.stream.IntStream.range(kept, after.worldSize())
                .allMatch(run.running::has);
        run.log(start, "live: ranks 0-" + (kept - 1) + " continue in place under " + after
                + (after.worldSize() > kept ? (ahead ? ", ranks " + kept + "-" + (after.worldSize() - 1)
                        + " (started ahead) join" : ", starting ranks " + kept + "-" + (after.worldSize() - 1)) : "")
                + (before.worldSize() > kept ? ", ranks " + kept + "-" + (before.worldSize() - 1) + " leave" : ""));
        if (after.worldSize() > kept) {
            run.launcher.launch(after, devices, segment, kept, group);
        }
        // the removed ranks, and ranks started ahead beyond the committed world (e.g. the change failed), leave;
        // the others go on at once
        run.running.release(after.worldSize(), wrong -> run.log(start, "live: " + wrong + "; nothing it saved is lost"));
    }

    /** Every rank exits (they have saved) and all of {@code config} are launched again. */
    private void relaunch(long start, int n, ParallelConfig config, int perWorker, int segment, String why)
            throws Exception {
        tell(n, LiveRoles.relaunch(why));
        run.running.awaitAll(EXIT_SECONDS);
        relaunchFresh(start, config, perWorker, segment, why);
    }

    private void relaunchFresh(long start, ParallelConfig config, int perWorker, int segment, String why)
            throws Exception {
        run.running.killAll();
        run.log(start, "live: " + why + "; relaunching all " + config.worldSize() + " processes under " + config
                + " from " + run.daemon.lastGeneration());
        fellBack = true;
        run.launcher.launch(config, Ptc.packedDevices(config.worldSize(), perWorker), segment, 0, "tenplex/launch/"
                + (run.launcher.launches + 1));
    }

    private void launchAll(long start, ParallelConfig config, int perWorker, int segment, String what) throws Exception {
        List<Device> devices = Ptc.packedDevices(config.worldSize(), perWorker);
        run.log(start, what + " " + config.worldSize() + " processes under " + config + " on "
                + RunCli.workers(devices) + " worker(s), live");
        run.launcher.launch(config, devices, segment, 0, "tenplex/launch/" + (run.launcher.launches + 1));
    }

    /** A stop entry: the ranks save and wait; they are told to leave once the job's generation is complete. */
    private void stop(long start, int n, Schedule.Entry next) throws Exception {
        while (run.running.alive() > 0 && run.store.count(LiveRoles.waiting(n)) < run.running.alive()) {
            Thread.sleep(POLL_MILLIS);
        }
        changeId = null;
        tell(n, LiveRoles.leave("the job stopped at " + next.when()));
        run.running.awaitAll(EXIT_SECONDS);
        JobOnDaemon.NotStopped unasked = run.daemon.whyNotStopped(next);
        run.end(start, next);
        if (unasked.neverAsked()) { // it may have trained past the stop
            run.notApplied(schedule, next, unasked.why());
        }
    }

    /** Sets reconfiguration {@code n}'s answer to {@code role}, signed (the ranks refuse a role that is not). */
    private void tell(int n, String role) throws java.io.IOException {
        run.store.set(LiveRoles.key(n), run.roles.sign(n, changeId, role));
    }
}
