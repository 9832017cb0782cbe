package io.tenplex.jobs.generations;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.Limits;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.store.DataRef;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.stream.LongStream;

/**
 * The saved-state generations of the jobs on one daemon. Training writes a rank's state under
 * {@code /job/<job>/save/<rank>/} (the prototype's layout) and then seals it for a step: the rank's
 * tree is snapshotted (bytes shared, later writes do not show through) to
 * {@code /job/<job>/generations/<step>/<rank>/} with a manifest of per-tensor checksums. Every daemon
 * of the cluster is told which ranks are sealed; when all {@code world} ranks of a step are, the
 * generation is complete and {@code /job/<job>/generation} names it. Until then readers keep
 * seeing the previous complete generation. Older complete generations than the previous one are
 * dropped.
 */
public final class Generations {
    static final String DIR = JobLayout.GENERATIONS;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Generations.class);

    /**
     * What later tiers subscribe to. Called on the thread that completed the generation, while the
     * generations are locked: a listener must not block or call back into them.
     */
    public interface Listener {
        /** Every rank of {@code step} is sealed: it is the job's current generation. */
        default void completed(String job, long step) {
        }

        /** An older generation of {@code job} was dropped from this daemon's store. */
        default void dropped(String job, long step) {
        }

        /** A newer generation was dropped because a recovery went back to an older one (also on disk). */
        default void superseded(String job, long step) {
            dropped(job, step);
        }
    }

    private final TensorStore store;
    private final Tiers tiers = new Tiers();
    private final List<Listener> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final ObjectMapper json = new ObjectMapper();
    /** job to step to what is known of that step's save (sealed ranks anywhere in the cluster). */
    private final Map<String, TreeMap<Long, GenerationProgress>> jobs = new LinkedHashMap<>();

    private final LostGenerations lost = new LostGenerations();

    public Generations(TensorStore store) {
        this.store = store;
    }

    /** The generations of the jobs here that were lost, with their reasons. */
    public LostGenerations lost() {
        return lost;
    }

    /** The checkpoint levels of the jobs here, and those their generations reached. */
    public Tiers tiers() {
        return tiers;
    }

    /** Subscribes to completed and dropped generations. */
    public void addListener(Listener l) {
        listeners.add(l);
    }

    static StorePath generationDir(String job, long step) {
        return new JobLayout(job).generation(step);
    }

    /** The source directory (relative to the job) of a generation's rank trees. */
    public static String sourceDir(long step) {
        return JobLayout.generationSource(step);
    }

    private static StorePath currentFile(String job) {
        return new JobLayout(job).currentGeneration();
    }

    /**
     * Seals one rank of a save on this daemon: snapshots {@code save/<rank>} (an absent one seals as
     * empty: a rank that saved nothing, as Megatron's data-parallel replicas) and writes its manifest.
     * Re-sealing a sealed rank with the same saved state (a retry) changes nothing; sealing a different
     * state into a step the rank already sealed is a conflict (a save needs a newer step), never a
     * silent no-op.
     *
     * @return the manifest
     */
    public SealManifest seal(String job, long step, int rank, int world, JsonNode config) throws IOException {
        return seal(job, step, rank, world, config, new JobLayout(job).savedRank(rank));
    }

    /**
     * As {@link #seal(String, long, int, int, JsonNode)}, sealing the tree at {@code saved} (what one
     * commit published, which no other writer can change) instead of {@code save/<rank>}.
     */
    public synchronized SealManifest seal(String job, long step, int rank, int world, JsonNode config, StorePath saved)
            throws IOException {
        check(step, world);
        GenerationProgress p = progress(job, step, world, config, List.of(rank));
        StorePath target = generationDir(job, step).child(Integer.toString(rank));
        StorePath manifest = generationDir(job, step).child("manifests").child(rank + ".json");
        if (store.stat(target).isEmpty()) {
            if (p.complete) {
                throw StoreException.conflict("generation " + step + " of job " + job + " is complete; rank " + rank
                        + " cannot be sealed into it again");
            }
            if (store.stat(saved).isPresent()) {
                store.snapshot(saved, target);
            } else {
                store.mkdirs(target);
            }
            SealManifest m = SealManifests.of(store, target, rank, step);
            SmallFiles.put(store, manifest, json.writerWithDefaultPrettyPrinter().writeValueAsString(m));
            LOG.info("generation sealed job={} step={} rank={} world={} bytes={}", job, step, rank, world, m.bytes());
            return m;
        }
        SealManifest sealed = SealManifests.read(store, manifest, job, step, rank);
        SealManifests.checkSameState(store, job, step, rank, sealed, saved);
        return sealed;
    }

    private static void checkRank(int rank, int world) {
        if (rank < 0 || rank >= world) {
            throw new IllegalArgumentException("rank " + rank + " is outside a world of " + world);
        }
    }

    private static void check(long step, int world) {
        if (step < 0) {
            throw new IllegalArgumentException("step " + step + " is negative");
        }
        if (world < 1 || world > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("\"world\" (the number of ranks that seal a save) must be in [1, "
                    + Limits.MAX_RANKS + "], got " + world);
        }
    }

    /** The step's progress, created on first use; checks that the world and ranks agree with it. */
    private GenerationProgress progress(String job, long step, int world, JsonNode config, List<Integer> ranks) {
        TreeMap<Long, GenerationProgress> steps = jobs.computeIfAbsent(job, j -> new TreeMap<>());
        GenerationProgress p = steps.get(step);
        if (p != null && p.world != world) {
            throw StoreException.conflict("the save of step " + step + " of job " + job + " has " + p.world
                    + " ranks, not " + world);
        }
        ranks.forEach(r -> checkRank(r, world));
        if (p == null) {
            OptionalLong current = current(job);
            if (current.isPresent() && step <= current.getAsLong() && store.stat(generationDir(job, step)).isEmpty()) {
                throw StoreException.conflict("step " + step + " is not newer than the complete generation "
                        + current.getAsLong() + " of job " + job);
            }
            p = new GenerationProgress(world, config == null || config.isMissingNode() ? null : config);
            steps.put(step, p);
        }
        return p;
    }

    /**
     * Records that {@code ranks} of a step are sealed somewhere in the cluster; completes the
     * generation when all are. Idempotent.
     *
     * @return whether the generation is complete
     */
    public synchronized boolean sealed(String job, long step, List<Integer> ranks, int world, JsonNode config)
            throws IOException {
        check(step, world);
        GenerationProgress p = progress(job, step, world, config, ranks);
        p.sealed.addAll(ranks);
        if (!p.complete && p.sealed.size() == world) {
            complete(job, step, p);
        }
        return p.complete;
    }

    private void writeGenerationFile(String job, long step, GenerationProgress p) throws IOException {
        ObjectNode g = json.createObjectNode();
        g.put("step", step);
        g.put("world", p.world);
        if (p.config != null) {
            g.set("config", p.config);
        }
        store.mkdirs(generationDir(job, step));
        SmallFiles.put(store, generationDir(job, step).child("generation.json"),
                json.writerWithDefaultPrettyPrinter().writeValueAsString(g));
    }

    /**
     * Takes back a complete generation restored from the durable tier, whose rank trees are already in
     * the store under {@code generations/<step>/<rank>/}: writes its {@code generation.json} and the
     * ranks' manifests and records every rank as sealed; the newest restored step becomes current.
     * Listeners are not told (nothing new completed).
     */
    public synchronized void restored(String job, long step, int world, JsonNode config) throws IOException {
        check(step, world);
        GenerationProgress p = new GenerationProgress(world, config == null || config.isMissingNode() ? null : config);
        for (int r = 0; r < world; r++) {
            p.sealed.add(r);
        }
        p.complete = true;
        jobs.computeIfAbsent(job, j -> new TreeMap<>()).put(step, p);
        writeGenerationFile(job, step, p);
        for (Entry e : store.list(generationDir(job, step), false)) {
            if (e.type() == EntryType.DIR && numeric(e.name())) {
                int rank = Integer.parseInt(e.name());
                SmallFiles.put(store, generationDir(job, step).child("manifests").child(rank + ".json"),
                        json.writerWithDefaultPrettyPrinter().writeValueAsString(SealManifests.of(store, e.path(), rank, step)));
            }
        }
        OptionalLong current = current(job);
        if (current.isEmpty() || current.getAsLong() < step) {
            SmallFiles.put(store, currentFile(job), Long.toString(step));
        }
        tiers.reached(job, step, Tiers.MEMORY);
        notifyAll();
    }

    private void complete(String job, long step, GenerationProgress p) throws IOException {
        writeGenerationFile(job, step, p);
        OptionalLong previous = current(job);
        SmallFiles.put(store, currentFile(job), Long.toString(step));
        p.complete = true;
        if (store.stat(generationDir(job, step)).isPresent()) {
            tiers.reached(job, step, Tiers.MEMORY);
        }
        notifyAll(); // a lifecycle waiting for this save
        // keep the new generation and the one before it; drop older complete ones
        TreeMap<Long, GenerationProgress> steps = jobs.get(job);
        for (Long s : new ArrayList<>(steps.headMap(step).keySet())) {
            if (previous.isPresent() && s == previous.getAsLong()) {
                continue;
            }
            steps.remove(s);
            try {
                store.delete(generationDir(job, s));
                tiers.dropped(job, s);
                JobMetrics.GENERATIONS.labels("dropped").inc();
                LOG.info("generation dropped job={} step={}", job, s);
                listeners.forEach(l -> l.dropped(job, s));
            } catch (StoreException e) {
                // an incomplete older save that left nothing on this daemon
            }
        }
        JobMetrics.GENERATIONS.labels("completed").inc();
        lost.found(job, step);
        LOG.info("generation complete job={} step={} world={} previous={}", job, step, p.world, previous.orElse(-1));
        listeners.forEach(l -> l.completed(job, step));
    }

    /**
     * Waits until the job has a complete generation newer than {@code after} (and at least
     * {@code atLeast}), at most {@code timeoutMillis}.
     *
     * @return the new generation's step, or empty on timeout
     */
    public synchronized OptionalLong awaitNewer(String job, long after, long atLeast, long timeoutMillis,
            java.util.function.BooleanSupplier cancelled) throws InterruptedException {
        long end = System.nanoTime() + timeoutMillis * 1_000_000L;
        while (true) {
            OptionalLong c = current(job);
            if (c.isPresent() && c.getAsLong() > after && c.getAsLong() >= atLeast) {
                return c;
            }
            if (cancelled.getAsBoolean()) {
                return OptionalLong.empty();
            }
            long left = (end - System.nanoTime()) / 1_000_000L;
            if (left <= 0) {
                return OptionalLong.empty();
            }
            wait(left);
        }
    }

    /** Wakes every waiter of {@link #awaitNewer} (to see a cancellation). */
    public synchronized void wake() {
        notifyAll();
    }

    /** The jobs with saves on record here (sealed here, or told by the daemon that sealed them). */
    public synchronized java.util.Set<String> jobs() {
        return java.util.Set.copyOf(jobs.keySet());
    }

    /** The step of the job's current complete generation, if any. */
    public OptionalLong current(String job) {
        java.util.Optional<String> text = SmallFiles.read(store, currentFile(job));
        if (text.isEmpty()) {
            return OptionalLong.empty();
        }
        OptionalLong step = JobLayout.step(text.get().strip());
        if (step.isPresent()) {
            return step;
        }
        OptionalLong known = newestComplete(job); // the file was changed behind the daemon's back
        LOG.warn("job={}: {} holds '{}', not a step; the newest complete generation known here is {}", job,
                currentFile(job), text.get().strip(), known);
        return known;
    }

    private synchronized OptionalLong newestComplete(String job) {
        TreeMap<Long, GenerationProgress> steps = jobs.get(job);
        if (steps != null) {
            for (Map.Entry<Long, GenerationProgress> e : steps.descendingMap().entrySet()) {
                if (e.getValue().complete) {
                    return OptionalLong.of(e.getKey());
                }
            }
        }
        return OptionalLong.empty();
    }

    /** The steps of the job's complete generations older than {@code step} still on this daemon, newest first. */
    public synchronized List<Long> completeBefore(String job, long step) {
        TreeMap<Long, GenerationProgress> steps = jobs.get(job);
        if (steps == null) {
            return List.of();
        }
        List<Long> out = new ArrayList<>();
        steps.headMap(step, false).descendingMap().forEach((s, p) -> {
            if (p.complete) {
                out.add(s);
            }
        });
        return out;
    }

    /** The configuration recorded with a complete generation (null when none was given). */
    public JsonNode config(String job, long step) throws IOException {
        JsonNode c = generationJson(job, step).path("config");
        return c.isMissingNode() ? null : c;
    }

    /** The number of ranks of a complete generation (from its {@code generation.json}). */
    public int world(String job, long step) throws IOException {
        return generationJson(job, step).path("world").asInt();
    }

    private JsonNode generationJson(String job, long step) throws IOException {
        return json.readTree(SmallFiles.read(store, generationDir(job, step).child("generation.json")).orElseThrow(
                () -> StoreException.notFound("no complete generation " + step + " of job " + job + " on this daemon")));
    }

    /** Forgets the job's saves' progress (its tree was removed; {@code Jobs.forget} forgets the rest). */
    public synchronized void forget(String job) { jobs.remove(job); }

    /**
     * Drops generation {@code step}, newer than {@code back}, from this daemon: a recovery went back to
     * generation {@code back}, so the job's history after it is abandoned. Listeners hear
     * {@link Listener#superseded}; the current generation becomes {@code back}.
     */
    public synchronized void supersede(String job, long step, long back) {
        jobs.getOrDefault(job, new TreeMap<>()).remove(step);
        try {
            store.delete(generationDir(job, step));
        } catch (StoreException e) {
            // nothing of it on this daemon
        }
        tiers.dropped(job, step);
        listeners.forEach(l -> l.superseded(job, step));
        if (current(job).orElse(-1) >= step) {
            SmallFiles.put(store, currentFile(job), Long.toString(back));
        }
        lost.lost(job, step, "superseded: the job went back to generation " + back);
        LOG.info("generation superseded job={} step={}: the job went back to generation {}", job, step, back);
    }

    /** What this daemon knows of a job's generations (its store, and the seals it was told of). */
    public synchronized GenerationsStatus describe(String job) {
        return GenerationsReport.describe(store, tiers, job, current(job), jobs.getOrDefault(job, new TreeMap<>()),
                lost.of(job));
    }

    /** Whether a name in a generation's directory is a rank's tree (decimal, at most 9 digits). */
    static boolean numeric(String name) {
        return !name.isEmpty() && name.length() < 10 && name.chars().allMatch(Character::isDigit);
    }
}
