package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.adapters.BuiltinChooser;
import io.tenplex.adapters.ParaConfigTable;
import io.tenplex.adapters.Parallelizer;
import io.tenplex.adapters.Schedule;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/**
 * {@code tenplex run --schedule schedule.json -- <training command>}: a local launcher in the manner
 * of {@code torchrun}. It starts one process per rank with the rank, world size, (T, P, D) and the
 * daemon's address in the environment, follows the schedule (each change goes to the daemon's
 * resource lifecycle: stop flag, save, reconfigure), relaunches under the new configuration, and
 * prints what happened.
 */
@Command(name = "run", description = "Run a training command locally and follow a schedule of resource changes.")
final class RunCli implements Callable<Integer> {
    @CommandLine.Mixin
    TenplexCli.Target t;

    @Option(names = "--schedule", required = true, description = "schedule.json: [{\"step\"|\"time\": .., \"size\": N "
            + "(, \"tp\", \"pp\", \"dp\")}, ...].")
    Path schedule;

    @Option(names = "--job", description = "Job name (default: TENPLEX_JOB or 'job').")
    String job = System.getenv().getOrDefault("TENPLEX_JOB", "job");

    @Option(names = "--devices-per-worker", description = "Devices per worker (default: the largest size in the schedule, one worker).")
    int devicesPerWorker;

    @Option(names = "--para-config", description = "The prototype's para-config table (JSON) to choose configurations for sizes.")
    Path paraConfig;

    @Option(names = "--model", description = "Model spec JSON for the built-in chooser (default: the one stored with the job).")
    Path model;

    @Option(names = "--save-timeout", defaultValue = "600", description = "Seconds to wait for every rank to save after a stop (default: ${DEFAULT-VALUE}).")
    long saveTimeout;

    @Option(names = "--max-restarts", defaultValue = "0", description = "Times to restart every rank when one fails, "
            + "as torchrun's: all ranks are ended and relaunched under the same configuration and load the last "
            + "complete generation (default: ${DEFAULT-VALUE}).")
    int maxRestarts;

    @Option(names = "--live", description = "Live reconfiguration (docs/LIVE.md): ranks that continue under the new "
            + "configuration keep their processes (tenplex.elastic), only added ranks are started and removed ranks "
            + "leave; every rank is relaunched instead when one cannot continue in place, with the reason printed.")
    boolean live;

    @Option(names = "--store-python", description = "Interpreter (with torch) for the rendezvous store the run hosts "
            + "before any rank starts (default: the command's, when it is a python; without one and without --live "
            + "rank 0 hosts the store, as before).")
    String storePython;

    @Option(names = "--regroup-timeout", defaultValue = "120", description = "Seconds a live rank waits for the new "
            + "process group to form before it fails and every rank is relaunched (default: ${DEFAULT-VALUE}).")
    long regroupTimeout;

    @Option(names = "--no-prestart", description = "Relaunch mode: start the next configuration's processes after "
            + "the commit, not when the change is posted (pre-started interpreters: docs/LIVE.md).")
    boolean noPrestart;

    @Parameters(arity = "1..*", paramLabel = "COMMAND", description = "The training command (after --).")
    List<String> command;

    /** The rendezvous store the run hosts, or null (rank 0 hosts it). */
    StoreHost store;
    /** Resource changes posted so far (the live reconfiguration's number is this count). */
    int posted;
    /** The reconfigurations' downtimes (relaunch mode), or null. */
    Downtimes downtimes;
    /** The next segment's pre-started interpreters (relaunch mode), or null. */
    volatile Prestarted prestarted;
    /** Starts the ranks' processes. */
    final RankLauncher launcher = new RankLauncher(this);

    final PrintStream out = System.out;
    final Ranks running = new Ranks();
    int restarts;
    /** The resource change this run posted and has not seen end, for a stop (SIGINT, SIGTERM) to cancel. */
    volatile String pendingChange;
    /** Whether this run raised a stop flag of its own (a schedule's stop entry) that is still up. */
    volatile boolean stopRaised;
    /** The pending change's events, printed as they happen. */
    ChangeEvents events;

    JobLayout layout() {
        return new JobLayout(job);
    }

    @Override
    public Integer call() throws Exception {
        io.tenplex.store.JobNamespace.requireValidName(job);
        if (maxRestarts < 0) {
            throw new IllegalArgumentException("--max-restarts must be >= 0, got " + maxRestarts);
        }
        Schedule s = Schedule.parse(TenplexCli.readJson(schedule, "--schedule").toString());
        int perWorker = devicesPerWorker > 0 ? devicesPerWorker
                : s.entries().stream().mapToInt(Schedule.Entry::size).max().orElse(1);
        Parallelizer parallelizer = paraConfig != null ? ParaConfigTable.parse(TenplexCli.readText(paraConfig, "--para-config"))
                : new BuiltinChooser();
        String python = storePython != null ? storePython : StoreHost.pythonOf(command);
        if (live && python == null) {
            throw new IllegalArgumentException("--live needs an interpreter with torch for the rendezvous store: the "
                    + "command '" + command.get(0) + "' is not a python; give --store-python");
        }
        t.get("/api/v1/health");
        declareJob();
        store = python == null ? null : live || storePython != null ? StoreHost.start(python) : StoreHost.startOptional(python, out);
        Thread hook = new Thread(this::stopped, "tenplex-run-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            long start = System.nanoTime();
            return live ? new LiveFollow(this).follow(s, perWorker, parallelizer, start)
                    : follow(s, perWorker, parallelizer, start);
        } finally {
            running.killAll();
            Prestarted.close(this);
            if (store != null) {
                store.close();
            }
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // shutting down
            }
        }
    }

    /**
     * The run was stopped (SIGINT, SIGTERM): its ranks end, and what it asked of the daemon is taken back,
     * so that the job can be run again at once (no change left waiting for saves, no stop flag up).
     */
    private void stopped() {
        running.killAll();
        Prestarted.close(this);
        String change = pendingChange;
        if (change != null) {
            cancel(change);
            out.println("tenplex run: stopped; cancelled resource change " + change + " of job " + job);
        }
        if (stopRaised) {
            try {
                t.delete(layout().apiStop());
                out.println("tenplex run: stopped; cleared the stop flag of job " + job);
            } catch (Exception e) {
                out.println("tenplex run: could not clear the stop flag of job " + job + ": " + e.getMessage());
            }
        }
        out.flush();
    }

    /** Runs segment after segment of the schedule; the exit status. */
    private int follow(Schedule s, int perWorker, Parallelizer parallelizer, long start) throws Exception {
        Schedule.Entry first = s.entries().get(0);
        ParallelConfig config = first.config() != null ? first.config()
                : parallelizer.choose(new Parallelizer.Request(first.size(), perWorker, storedModel(), 0));
        refuseOtherConfiguration(config);
        List<Downtimes.Finished> summary = new ArrayList<>();
        downtimes = new Downtimes(t, line -> log(start, line));
        for (int i = 0; ; i++) {
            Schedule.Entry next = i + 1 < s.entries().size() ? s.entries().get(i + 1) : null;
            String change = segment(start, config, perWorker, i, next);
            int failed = waitWithRestarts(start, config, perWorker, i);
            if (failed != 0) {
                log(start, "a training process failed (exit " + failed + "); stopping");
                cancel(change);
                pendingChange = null;
                return 1;
            }
            if (next == null || next.stops()) {
                end(start, next);
                break;
            }
            JsonNode status = finish(start, change);
            pendingChange = null;
            if (status.path("state").asText().equals("failed") && status.path("generation").isNull()) {
                log(start, "the job ended before " + next.when() + ": " + status.path("error").asText());
                break;
            }
            if (!status.path("state").asText().equals("done")) {
                log(start, "the resource change failed: " + status.path("error").asText());
                return 1;
            }
            ParallelConfig before = config;
            config = ParallelConfigJson.parse(status.path("config"), "config ");
            summary.add(new Downtimes.Finished(String.format(Locale.ROOT, "step %s: %s -> %s, ", status.path(
                    "generation").asText(), before, config), layout().apiResourceChange(change), status));
            downtimes.watch(layout().apiResourceChange(change), status.path("generation").asText());
        }
        downtimes.close();
        out.println("tenplex run: " + summary.size() + " reconfiguration(s)");
        summary.forEach(f -> out.println("  " + f.head() + Downtimes.report(f.now(t))));
        return 0;
    }

    /** Launches one segment under {@code config} and posts the next entry; the resource change's id, or null. */
    String segment(long start, ParallelConfig config, int perWorker, int i, Schedule.Entry next)
            throws IOException, InterruptedException {
        List<Device> devices = Ptc.packedDevices(config.worldSize(), perWorker);
        log(start, "launching " + config.worldSize() + " processes under " + config + " on "
                + workers(devices) + " worker(s)");
        launch(config, devices, i);
        if (next == null) {
            return null;
        }
        if (!next.byStep()) {
            waitUntil(start, next.minutes());
        }
        String change = post(next, perWorker, paraConfig);
        pendingChange = change;
        if (change != null) {
            events = new ChangeEvents(t, layout().apiResourceChange(change), line -> log(start, line)).start();
        }
        log(start, "at " + next.when() + ": " + (next.stops() ? "stop" : "change to " + next.size()
                + " devices" + (next.config() != null ? " as " + next.config() : "")) + (change != null
                ? " (resource change " + change + ")" : ""));
        Prestarted.forNext(this, next, change, i + 1, start);
        return change;
    }

    /**
     * Waits for the ranks of segment {@code i}; when one fails, ends the others and relaunches all of
     * them under {@code config} (they load the last complete generation), up to {@code --max-restarts}
     * times in the whole run. The first failing exit status when no restart is left, else 0.
     */
    int waitWithRestarts(long start, ParallelConfig config, int perWorker, int i)
            throws IOException, InterruptedException {
        int failed = running.waitForAll();
        while (failed != 0 && restarts < maxRestarts) {
            restarts++;
            log(start, "a training process failed (exit " + failed + "); restarting all " + config.worldSize()
                    + " processes from " + lastGeneration() + " (restart " + restarts + " of " + maxRestarts + ")");
            launch(config, Ptc.packedDevices(config.worldSize(), perWorker), i);
            failed = running.waitForAll();
        }
        return failed;
    }

    /**
     * Refuses to start when the job already has a complete generation saved under another (T,P,D)
     * than the schedule's first: its ranks would load state cut for another configuration (a job
     * name used again; the job's state stays on the daemon after it ends).
     */
    void refuseOtherConfiguration(ParallelConfig config) throws IOException, InterruptedException {
        JsonNode g = t.get(layout().api("/generations"));
        if (!g.path("current").isNumber()) {
            return;
        }
        long current = g.path("current").asLong();
        for (JsonNode gen : g.path("generations")) {
            JsonNode c = gen.path("config");
            if (gen.path("step").asLong() == current && c.isObject() && (c.path("tp").asInt(1) != config.tp()
                    || c.path("pp").asInt(1) != config.pp() || c.path("dp").asInt(1) != config.dp())) {
                throw new IllegalArgumentException("job " + job + " already has generation " + current + ", saved under "
                        + "(T,P,D)=(" + c.path("tp").asInt(1) + "," + c.path("pp").asInt(1) + "," + c.path("dp").asInt(1)
                        + "), and the schedule starts with " + config + ": its ranks would load state cut for another "
                        + "configuration; run under another --job, or remove the finished job first with tenplex rm " + job
                        + " (tenplex jobs lists the daemon's jobs)");
            }
        }
    }

    /** "generation N" (the last complete one) or "the start" when there is none yet. */
    String lastGeneration() {
        try {
            JsonNode g = t.get(layout().api("/generations"));
            return g.path("current").isNumber() ? "generation " + g.path("current").asLong() : "the start (no complete "
                    + "generation yet)";
        } catch (Exception e) {
            return "the last complete generation";
        }
    }

    /**
     * Creates the job's tree on the daemon ({@code PUT /api/v1/dirs/job/<job>}): the daemon refuses
     * resource changes and stop-flag queries for jobs it does not know, and this one's first save may
     * come only after the schedule's first change.
     */
    private void declareJob() throws IOException, InterruptedException {
        var r = t.send(t.request("/api/v1/dirs" + TenplexCli.encode(layout().root().toString())).PUT(java.net.http.HttpRequest.BodyPublishers
                .noBody()));
        if (r.statusCode() >= 300) {
            throw new IllegalArgumentException("cannot create job " + job + " on " + t.addr + ": " + r.statusCode()
                    + " " + r.body().strip());
        }
    }

    /** The job ended: at the end of the schedule, or at a stop entry (whose stop flag is then cleared). */
    void end(long start, Schedule.Entry next) throws IOException, InterruptedException {
        if (next != null) {
            t.delete(layout().apiStop());
            stopRaised = false;
        }
        log(start, "the job ended" + (next != null ? " (stopped at " + next.when() + ")" : ""));
    }

    static long workers(List<Device> devices) {
        return devices.stream().mapToInt(Device::worker).distinct().count();
    }

    io.tenplex.ptc.Model storedModel() throws IOException, InterruptedException {
        if (model != null) {
            return ModelSpecJson.parse(TenplexCli.readText(model, "--model"));
        }
        var r = t.send(t.request("/api/v1/files" + layout().modelSpec()));
        return r.statusCode() == 200 ? ModelSpecJson.parse(r.body()) : null;
    }

    void log(long start, String what) {
        out.printf(Locale.ROOT, "[tenplex run %7.1fs] %s%n", (System.nanoTime() - start) / 1e9, what);
        out.flush();
    }

    private void launch(ParallelConfig c, List<Device> devices, int segment) throws IOException {
        launcher.launch(c, devices, segment, 0, "tenplex/launch/" + (launcher.launches + 1));
    }

    void waitUntil(long start, double minutes) throws InterruptedException {
        long due = start + (long) (minutes * 60e9);
        while (System.nanoTime() < due && running.anyAlive()) {
            Thread.sleep(Math.min(200, Math.max(1, (due - System.nanoTime()) / 1_000_000))); // a wall-clock schedule
        }
    }


    /** Posts the entry to the daemon: a resource change (its id), or for size 0 the stop flag alone (null). */
    String post(Schedule.Entry e, int perWorker, Path table) throws IOException, InterruptedException {
        ObjectNode b = TenplexCli.JSON.createObjectNode();
        if (e.byStep()) {
            b.put("atStep", e.step());
        }
        if (e.stops()) {
            b.put("reason", "schedule: stop at " + e.when());
            stopRaised = true;
            t.post(layout().apiStop(), b.toString());
            return null;
        }
        b.put("size", e.size());
        b.put("devicesPerWorker", perWorker);
        b.put("saveTimeoutSeconds", saveTimeout);
        if (e.config() != null) {
            b.set("config", ParallelConfigJson.write(e.config()));
        } else if (table != null) {
            b.putObject("parallelizer").set("table", TenplexCli.readJson(table, "--para-config"));
        }
        return t.post(layout().apiResources(), b.toString()).path("id").asText();
    }

    void cancel(String change) {
        if (change == null) {
            return;
        }
        try {
            t.delete(layout().apiResourceChange(change));
        } catch (Exception e) {
            out.println("could not cancel resource change " + change + ": " + e.getMessage());
        }
    }

    /**
     * Follows a resource change to its end (cancelling it when the job ended without saving for it); its
     * events are printed as they happen ({@link ChangeEvents}, from the moment it was posted).
     */
    JsonNode finish(long start, String change) throws Exception {
        ChangeEvents ev = events != null ? events : new ChangeEvents(t, layout().apiResourceChange(change),
                line -> log(start, line));
        events = null;
        JsonNode s = ev.stopAndRead();
        if (s.path("state").asText().equals("stopping")) {
            cancel(change); // every process has exited: no save for this change is coming after this point
        }
        while (s.path("state").asText().equals("reconfiguring") || s.path("state").asText().equals("stopping")) {
            Thread.sleep(ChangeEvents.POLL_MILLIS); // polling the daemon for new events, not waiting for a result
            s = ev.read();
        }
        return s;
    }
}
