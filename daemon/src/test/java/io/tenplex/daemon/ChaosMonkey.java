package io.tenplex.daemon;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * The chaos thread of {@link ChaosIT}: at random moments (from the run's seed) it injects one of the
 * enabled {@link ChaosFault}s; the driver asks it for the timed kills ({@link #killWhen}). A fault and
 * the restart it needs run under {@link #quiet}, which the driver holds while it checks the
 * invariants, so checks see every daemon up. It counts what it injected by kind.
 */
final class ChaosMonkey implements AutoCloseable {
    private final ChaosCluster cluster;
    private final java.util.Set<ChaosFault> enabled;
    private final Random rnd;
    private final Thread thread;
    private final Map<ChaosFault, Integer> injected = new EnumMap<>(ChaosFault.class);
    private final List<String> notes = new ArrayList<>();
    /** Held by a fault and its restart, and by the driver while it checks the invariants. */
    final ReentrantLock quiet = new ReentrantLock();
    private volatile boolean stop;
    private volatile Throwable died;
    private final List<String> breaches = new ArrayList<>();
    /** Every fault injected, in order, as a line. */
    private final List<String> log = new ArrayList<>();
    private final List<Long> logTimes = new ArrayList<>();
    /** Durable damage by what the restarted daemon made of it ({@link #afterDurableDamage}). */
    private final Map<String, Integer> durableOutcomes = new java.util.TreeMap<>();

    ChaosMonkey(ChaosCluster cluster, java.util.Set<ChaosFault> enabled, long seed) {
        this.cluster = cluster;
        this.enabled = enabled;
        this.rnd = new Random(seed);
        this.thread = new Thread(this::run, "chaos");
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    private void run() {
        List<ChaosFault> random = enabled.stream().filter(ChaosMonkey::random).toList();
        try {
            while (!stop && !random.isEmpty()) {
                long pause;
                ChaosFault f;
                synchronized (rnd) {
                    pause = 3000 + rnd.nextInt(5000);
                    f = random.get(rnd.nextInt(random.size()));
                }
                if (sleep(pause)) {
                    return;
                }
                quiet.lock();
                try {
                    if (!stop) {
                        inject(f);
                    }
                } finally {
                    quiet.unlock();
                }
            }
        } catch (Throwable t) {
            died = t;
        }
    }

    /** Sleeps (the chaos's own pacing, not synchronisation); true when told to stop meanwhile. */
    private boolean sleep(long millis) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!stop && System.nanoTime() < end) {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
        }
        return stop;
    }

    private int pick(int n) {
        synchronized (rnd) {
            return rnd.nextInt(n);
        }
    }

    /** The kinds the chaos thread injects at random moments (the others the driver times). */
    static boolean random(ChaosFault f) {
        return f == ChaosFault.KILL || f == ChaosFault.DURABLE_FLIP || f == ChaosFault.DURABLE_TRUNCATE
                || f == ChaosFault.SHM_FLIP || f == ChaosFault.SHM_TRUNCATE;
    }

    /** Injects a random kind now (also the driver's, for a kind the run has not seen yet); under {@link #quiet}. */
    void inject(ChaosFault f) throws Exception {
        quiet.lock();
        try {
            switch (f) {
                case KILL -> kill(pick(ChaosCluster.WORKERS), f);
                case DURABLE_FLIP, DURABLE_TRUNCATE -> damageDurable(f, false);
                case SHM_FLIP, SHM_TRUNCATE -> damageSegment(f, false);
                default -> throw new IllegalStateException("not a random fault: " + f);
            }
        } finally {
            quiet.unlock();
        }
    }

    private synchronized void count(ChaosFault f, String note) {
        injected.merge(f, 1, Integer::sum);
        String line = f.wireName() + ": " + (note != null ? note : "injected");
        notes.add(line);
        log.add(line);
        logTimes.add(System.nanoTime());
    }

    /** How many faults were injected so far. */
    synchronized int total() {
        return log.size();
    }

    /** The faults injected at {@code System.nanoTime()} {@code since} or later, each as a line. */
    synchronized List<String> notesSince(long since) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < log.size(); i++) {
            if (logTimes.get(i) >= since) {
                out.add(log.get(i));
            }
        }
        return out;
    }

    private void kill(int w, ChaosFault why) throws Exception {
        long t0 = System.nanoTime();
        cluster.killAndRestart(w);
        count(why, "worker " + w + " killed and serving again after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    }

    /**
     * Kills a random worker as soon as {@code when} holds (polled every 2 ms for up to {@code seconds});
     * false when the moment never came (the operation finished first).
     */
    boolean killWhen(ChaosFault kind, BooleanSupplier when, double seconds) throws Exception {
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < end) {
            if (when.getAsBoolean()) {
                quiet.lock();
                try {
                    kill(pick(ChaosCluster.WORKERS), kind);
                } finally {
                    quiet.unlock();
                }
                return true;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(2_000_000L); // polling the daemons' state
        }
        synchronized (this) {
            notes.add(kind.wireName() + ": the moment passed before it was seen");
        }
        return false;
    }

    /**
     * Flips a byte of, or cuts short, a file of the newest durable generation of a random worker (its
     * manifest when {@code manifest}); restarts it and checks what it made of it ({@link #afterDurableDamage}).
     */
    private void damageDurable(ChaosFault f, boolean manifest) throws Exception {
        int w = pick(ChaosCluster.WORKERS);
        Path job = cluster.durable(w).resolve("jobs").resolve(ChaosSaves.JOB);
        List<Path> files = newestGenerationFiles(job, f == ChaosFault.DURABLE_FLIP).stream()
                .filter(p -> !manifest || p.getFileName().toString().equals("manifest.json")).toList();
        if (files.isEmpty()) {
            return;
        }
        Path file = files.get(pick(files.size()));
        long step = Long.parseLong(file.getParent().getFileName().toString());
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            long len = raf.length();
            if (len == 0) {
                return;
            }
            long at = (long) (pick(1 << 20) / (double) (1 << 20) * len);
            if (f == ChaosFault.DURABLE_FLIP) {
                raf.seek(at);
                int b = raf.read();
                raf.seek(at);
                raf.write(b ^ (1 << pick(8)));
            } else {
                raf.setLength(at);
            }
            count(f, "worker " + w + " " + job.relativize(file) + " at " + at + " of " + len);
        }
        cluster.killAndRestart(w);
        afterDurableDamage(f, w, step);
    }

    /**
     * What worker {@code w}, just restarted, made of the damage to its durable copy of {@code step}, from
     * its {@code GET .../generations}: restored as {@code durable} (the damage repaired from a peer's copy:
     * no effect), sealed again since (the driver's retry), or not restored: then its entry must carry
     * {@code lost}, the daemon's structured report of the loss; a loss it does not report is a breach.
     */
    private void afterDurableDamage(ChaosFault f, int w, long step) throws Exception {
        var answer = cluster.get(w, "/api/v1/jobs/" + ChaosSaves.JOB + "/generations");
        com.fasterxml.jackson.databind.JsonNode g = ChaosLedger.entry(answer, step);
        String outcome;
        if (g != null && g.hasNonNull("lost")) {
            outcome = ChaosEnd.REPORTED_LOST;
        } else if (g != null && g.path("levels").toString().contains("\"durable\"")) {
            outcome = "restored (repaired)";
        } else if (g != null && g.path("sealedRanks").size() > 0) {
            outcome = "sealed again since";
        } else {
            outcome = "not restored, not reported";
            breach("worker " + w + " did not restore its damaged durable copy of step " + step + " (" + f.wireName()
                    + ") and does not report it lost in GET .../generations: " + (answer.statusCode() != 200
                    ? "it answered " + ChaosSaves.summary(answer) : g == null ? "no entry" : g));
        }
        synchronized (this) {
            durableOutcomes.merge(outcome, 1, Integer::sum);
            notes.add(f.wireName() + ": worker " + w + " step " + step + " after the restart: " + outcome
                    + (g != null && g.hasNonNull("lost") ? " (" + g.path("lost").asText() + ")" : ""));
        }
    }

    /** Durable damage by what the restarted daemon made of it ({@link #afterDurableDamage}). */
    synchronized Map<String, Integer> durableOutcomes() {
        return new java.util.TreeMap<>(durableOutcomes);
    }

    /**
     * Cuts the manifest of a random worker's newest durable generation short and restarts it (a damage no
     * peer's copy repairs: the daemon must report the loss); under {@link #quiet}.
     */
    void damageDurableManifest() throws Exception {
        quiet.lock();
        try {
            damageDurable(ChaosFault.DURABLE_TRUNCATE, true);
        } finally {
            quiet.unlock();
        }
    }

    /** The newest step directory's pack (and, unless {@code packOnly}, manifest) of a job's durable directory. */
    private static List<Path> newestGenerationFiles(Path job, boolean packOnly) throws IOException {
        if (!Files.isDirectory(job)) {
            return List.of();
        }
        Path newest;
        try (Stream<Path> s = Files.list(job)) {
            newest = s.filter(p -> p.getFileName().toString().matches("\\d+") && Files.exists(p.resolve("manifest.json")))
                    .max(Comparator.comparingLong(p -> Long.parseLong(p.getFileName().toString()))).orElse(null);
        }
        if (newest == null) {
            return List.of();
        }
        List<Path> out = new ArrayList<>();
        for (String name : packOnly ? List.of("blocks.pack") : List.of("blocks.pack", "manifest.json")) {
            if (Files.isRegularFile(newest.resolve(name))) {
                out.add(newest.resolve(name));
            }
        }
        return out;
    }

    /**
     * Injects {@link ChaosFault#SHM_FLIP} or {@link ChaosFault#SHM_TRUNCATE} on the segment written last
     * (the one a shared save just committed), between the driver's steps.
     */
    void injectNow(ChaosFault f) throws Exception {
        quiet.lock();
        try {
            damageSegment(f, true);
        } finally {
            quiet.unlock();
        }
    }

    /**
     * {@link ChaosFault#SHM_EXHAUST}: reserves 8 MiB segments on worker 0 until it refuses one; the
     * reservations held (for {@link #release}). A refusal other than 507 {@code insufficient_storage}
     * is a breach.
     */
    List<String> exhaust() throws Exception {
        List<String> held = new ArrayList<>();
        String reserve = "{\"pid\": " + ProcessHandle.current().pid() + ", \"start\": " + selfStart()
                + ", \"lease\": 120, \"tensors\": [{\"path\": \"fill.numpy.ndarray\", \"dtype\": \"u8\", "
                + "\"shape\": [8388608]}], \"files\": []}";
        for (int i = 0; i < 64; i++) {
            var r = cluster.send(0, "POST", "/api/v1/jobs/" + ChaosSaves.JOB + "/shared/saves/99",
                    reserve.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            if (r.statusCode() == 201) {
                held.add(new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.body()).path("id").asText());
                continue;
            }
            String code = r.headers().firstValue("X-Tenplex-Error-Code").orElse("-");
            if (r.statusCode() == 507 && code.equals("insufficient_storage")) {
                count(ChaosFault.SHM_EXHAUST, "worker 0 refused the reservation after " + held.size() + " of 8 MiB: 507");
            } else {
                breach("a reservation beyond worker 0's memory was answered " + ChaosSaves.summary(r)
                        + " instead of 507 insufficient_storage");
            }
            return held;
        }
        breach("worker 0 took 64 reservations of 8 MiB under a budget of 160 MiB");
        return held;
    }

    /** Ends the reservations {@link #exhaust} held. */
    void release(List<String> held) throws Exception {
        for (String id : held) {
            cluster.send(0, "DELETE", "/api/v1/jobs/" + ChaosSaves.JOB + "/shared/" + id, null);
        }
    }

    private static long selfStart() throws IOException {
        String stat = Files.readString(Path.of("/proc/self/stat"));
        return Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[19]);
    }

    /** Something the daemon must never do, seen by a fault (a violation of the run). */
    private synchronized void breach(String what) {
        breaches.add(what);
    }

    /** The breaches seen since the last call (forgotten). */
    synchronized List<String> breaches() {
        List<String> out = List.copyOf(breaches);
        breaches.clear();
        return out;
    }

    /** Flips a byte of, or cuts short, one of worker 0's shared-memory segments (the newest when {@code newest}). */
    private void damageSegment(ChaosFault f, boolean newest) throws Exception {
        List<Path> segments = segments();
        if (segments.isEmpty()) {
            return;
        }
        Path seg = newest ? segments.get(segments.size() - 1) : segments.get(pick(segments.size()));
        try (RandomAccessFile raf = new RandomAccessFile(seg.toFile(), "rw")) {
            long len = raf.length();
            long at = 64 + (long) (pick(1 << 20) / (double) (1 << 20) * Math.max(1, len - 64));
            if (f == ChaosFault.SHM_FLIP) {
                raf.seek(Math.min(at, len - 1));
                int b = raf.read();
                raf.seek(Math.min(at, len - 1));
                raf.write(b ^ 0x5a);
            } else {
                try {
                    raf.setLength(at);
                } catch (IOException refused) { // a sealed segment: the kernel refuses the size change (EPERM)
                    count(f, seg.getFileName() + " at " + at + " of " + len + ": refused (" + refused.getMessage() + ")");
                    return;
                }
                breach("a committed segment " + seg + " (" + Files.readSymbolicLink(seg) + ") could be cut from " + len
                        + " to " + at + " bytes: its seals are gone");
            }
            count(f, seg.getFileName() + " at " + at + " of " + len);
        } catch (IOException e) {
            notes.add(f.wireName() + ": " + seg + " went away: " + e.getMessage());
        }
    }

    /**
     * Worker 0's shared-memory segments, oldest first: the sealed memory files its daemon holds open
     * ({@code /proc/<pid>/fd/<n>} linking to {@code /memfd:tenplex-segment}, what clients are handed),
     * and any segment files in its shared-memory directory.
     */
    private List<Path> segments() throws IOException {
        List<Path> out = new java.util.ArrayList<>();
        Path fds = Path.of("/proc", Long.toString(cluster.daemon(0).pid()), "fd");
        try (Stream<Path> s = Files.list(fds)) {
            s.filter(p -> {
                try {
                    return Files.readSymbolicLink(p).toString().startsWith("/memfd:tenplex-segment");
                } catch (IOException e) {
                    return false; // closed meanwhile
                }
            }).sorted(Comparator.comparingInt(p -> Integer.parseInt(p.getFileName().toString()))).forEach(out::add);
        } catch (IOException e) {
            notes.add("segments: " + fds + " cannot be listed: " + e.getMessage());
        }
        try (Stream<Path> s = Files.list(cluster.tmpfs())) {
            s.filter(p -> p.getFileName().toString().startsWith("tenplex-"))
                    .sorted(Comparator.comparingLong(ChaosMonkey::modified)).forEach(out::add);
        }
        return out;
    }

    private static long modified(Path p) {
        try {
            return Files.getLastModifiedTime(p).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }

    /** What was injected, by kind. */
    synchronized Map<ChaosFault, Integer> injected() {
        return new EnumMap<>(injected);
    }

    synchronized List<String> notes() {
        return List.copyOf(notes);
    }

    /** The failure that ended the chaos thread, if any. */
    Throwable died() {
        return died;
    }

    @Override
    public void close() throws Exception {
        stop = true;
        thread.join(TimeUnit.MINUTES.toMillis(2));
    }
}
