package io.tenplex.cli;

import io.tenplex.adapters.BuiltinChooser;
import io.tenplex.adapters.ParaConfigTable;
import io.tenplex.adapters.Parallelizer;
import io.tenplex.adapters.Schedule;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
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
 * prints what happened ({@link RelaunchFollow}; with {@code --live}, {@link LiveFollow}).
 */
@Command(name = "run", description = "Run a training command locally and follow a schedule of resource changes.",
        exitCodeListHeading = "Exit status:%n", exitCodeList = {"0:every schedule entry applied, every rank ended well",
            "1:a rank or a resource change failed", "2:a refusal (bad input, another job's state, the daemon gone)",
            "3:the ranks ended before some entries were applied (each printed with why)"})
final class RunCli implements Callable<Integer> {
    @CommandLine.Mixin
    TenplexCli.Target t;

    @Option(names = "--schedule", description = "schedule.json: [{\"step\"|\"time\": .., \"size\": N "
            + "(, \"tp\", \"pp\", \"dp\")}, ...]. Without one: a static job of --nproc ranks, resizable with tenplex resize.")
    Path schedule;

    @Option(names = {"--nproc", "--nproc-per-node"}, description = "Ranks of a job without --schedule (default: 1), "
            + "as torchrun's --nproc-per-node.")
    Integer nproc;

    @Option(names = "--nnodes", description = "As torchrun's: tenplex run starts ranks on this host only, so 1 (or 1:1).")
    String nnodes;

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
    /** Signs the live roles set in the store; its secret goes to the ranks (set when the run starts). */
    RoleSigner roles;
    /** Resource changes posted so far (the live reconfiguration's number is this count). */
    int posted;
    /** The reconfigurations' downtimes (relaunch mode), or null. */
    Downtimes downtimes;
    /** The next segment's pre-started interpreters (relaunch mode), or null. */
    volatile Prestarted prestarted;
    /** Starts the ranks' processes. */
    final RankLauncher launcher = new RankLauncher(this);
    /** The job on the daemon: what the run reads of it and asks of it. */
    final JobOnDaemon daemon = new JobOnDaemon(this);
    /** What the run records of its job's state for tenplex jobs. */
    final RunRecord record = new RunRecord(this);
    /** The schedule's fingerprint (the same command run again has the same), and the job's record before this run. */
    String scheduleId;
    com.fasterxml.jackson.databind.JsonNode previousRun;
    /** Set once a signal stopped the run (the stop records the job as cancelled). */
    private volatile boolean signalled;
    /** The last line the run printed (a failure's exit names its reason there). */
    private volatile String lastLine = "";

    final PrintStream out = System.out;
    final Ranks running = new Ranks();
    int restarts;
    /** The schedule's entries this run could not apply, each with why: the run then exits {@link #NOT_APPLIED}. */
    final List<String> notApplied = new java.util.ArrayList<>();
    /** The exit status of a run that ended without applying every entry of its schedule. */
    static final int NOT_APPLIED = 3;
    /** The resource change this run posted and has not seen end, for a stop (SIGINT, SIGTERM) to cancel. */
    volatile String pendingChange;
    /** Whether this run raised a stop flag of its own (a schedule's stop entry) that is still up. */
    volatile boolean stopRaised;

    JobLayout layout() {
        return new JobLayout(job);
    }

    @Override
    public Integer call() throws Exception {
        io.tenplex.store.JobNamespace.requireValidName(job);
        if (maxRestarts < 0) {
            throw new IllegalArgumentException("--max-restarts must be >= 0, got " + maxRestarts);
        }
        Schedule s = schedule();
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
        daemon.declareJob();
        scheduleId = fingerprint(s);
        previousRun = RunRecord.read(t, job);
        record.write("running", null);
        roles = RoleSigner.random(job);
        store = python == null ? null : live || storePython != null ? StoreHost.start(python) : StoreHost.startOptional(python, out);
        Thread hook = new Thread(this::stopped, "tenplex-run-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        int status = 1;
        String failure = null;
        try {
            long start = System.nanoTime();
            status = live ? new LiveFollow(this).follow(s, perWorker, parallelizer, start)
                    : new RelaunchFollow(this).follow(s, perWorker, parallelizer, start);
            return status;
        } catch (Exception | Error e) {
            failure = e.getMessage();
            throw e;
        } finally {
            recordEnd(status, failure);
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

    /** SHA-256 of the schedule's entries, as they were parsed (whitespace and key order do not count). */
    private static String fingerprint(Schedule s) throws java.security.NoSuchAlgorithmException {
        StringBuilder b = new StringBuilder();
        s.entries().forEach(e -> b.append(e).append('\n'));
        return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(
                b.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }

    /** The schedule given, or for a job without one the single entry of --nproc ranks; bad options refused. */
    private Schedule schedule() throws IOException {
        if (nnodes != null && !nnodes.strip().equals("1") && !nnodes.strip().equals("1:1")) {
            throw new IllegalArgumentException("--nnodes " + nnodes + ": tenplex run starts the ranks on this host only "
                    + "(--nnodes 1); for several hosts run one daemon per host (docs/SCHEDULING.md)");
        }
        if (schedule != null) {
            if (nproc != null) {
                throw new IllegalArgumentException("--nproc with --schedule: the schedule's first entry sets the number "
                        + "of ranks");
            }
            return Schedule.parse(TenplexCli.readJson(schedule, "--schedule").toString());
        }
        if (nproc != null && nproc < 1) {
            throw new IllegalArgumentException("--nproc must be >= 1, got " + nproc);
        }
        if (live) {
            throw new IllegalArgumentException("--live follows a --schedule; a job without one is resized by relaunching "
                    + "its ranks (run it without --live, then tenplex resize)");
        }
        return Schedule.parse("[{\"step\": 0, \"size\": " + (nproc == null ? 1 : nproc) + "}]");
    }

    /** Records how the run ended ({@code failure}: an exception's message, else null), unless a signal stopped it. */
    private void recordEnd(int status, String failure) {
        if (signalled) {
            return; // the stop records "cancelled"
        }
        record.write(status == 0 ? "finished" : "failed", status == 0 ? null : status == NOT_APPLIED
                ? notApplied.size() + " schedule entr" + (notApplied.size() == 1 ? "y" : "ies") + " not applied; the first: "
                + notApplied.get(0) : failure != null ? failure : lastLine);
    }

    /**
     * The run was stopped (SIGINT, SIGTERM): its ranks end, and what it asked of the daemon is taken back,
     * so that the job can be run again at once (no change left waiting for saves, no stop flag up).
     */
    private void stopped() {
        signalled = true;
        running.killAll();
        Prestarted.close(this);
        String change = pendingChange;
        if (change != null) {
            daemon.cancel(change);
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
        record.write("cancelled", "tenplex run was stopped by a signal (SIGINT or SIGTERM)");
        out.flush();
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
                    + " processes from " + daemon.lastGeneration() + " (restart " + restarts + " of " + maxRestarts + ")");
            launch(config, Ptc.packedDevices(config.worldSize(), perWorker), i);
            failed = running.waitForAll();
        }
        return failed;
    }

    /** The job ended: at the end of the schedule, or at a stop entry (whose stop flag is then cleared). */
    void end(long start, Schedule.Entry next) throws IOException, InterruptedException {
        if (next != null) {
            t.delete(layout().apiStop());
            stopRaised = false;
        }
        log(start, "the job ended" + (next != null ? " (stopped at " + next.when() + ")" : ""));
    }

    /**
     * Entry {@code e} of {@code s} was not applied ({@code why}); nor is any later one: the job has ended.
     */
    void notApplied(Schedule s, Schedule.Entry e, String why) {
        notApplied.add(what(e) + ": " + why);
        s.entries().stream().filter(l -> l.byStep() ? l.step() > e.step() : l.minutes() > e.minutes())
                .forEach(l -> notApplied.add(what(l) + ": the job had ended"));
    }

    /** The run's exit status once its ranks ended well: 0, or {@link #NOT_APPLIED} (the entries printed) when some were not applied. */
    int scheduleApplied() {
        if (notApplied.isEmpty()) {
            return 0;
        }
        out.println("tenplex run: " + notApplied.size() + " schedule entr" + (notApplied.size() == 1 ? "y" : "ies")
                + " not applied (exit " + NOT_APPLIED + "):");
        notApplied.forEach(l -> out.println("  " + l));
        out.flush();
        return NOT_APPLIED;
    }

    static String what(Schedule.Entry e) {
        return "at " + e.when() + ", " + (e.stops() ? "stop" : "change to " + e.size() + " devices"
                + (e.config() != null ? " as " + e.config() : ""));
    }

    static long workers(List<Device> devices) {
        return devices.stream().mapToInt(Device::worker).distinct().count();
    }

    void log(long start, String what) {
        lastLine = what;
        out.printf(Locale.ROOT, "[tenplex run %7.1fs] %s%n", (System.nanoTime() - start) / 1e9, what);
        out.flush();
    }

    void launch(ParallelConfig c, List<Device> devices, int segment) throws IOException {
        launcher.launch(c, devices, segment, 0, "tenplex/launch/" + (launcher.launches + 1));
    }

    void waitUntil(long start, double minutes) throws InterruptedException {
        long due = start + (long) (minutes * 60e9);
        while (System.nanoTime() < due && running.anyAlive()) {
            Thread.sleep(Math.min(200, Math.max(1, (due - System.nanoTime()) / 1_000_000))); // a wall-clock schedule
        }
    }
}
