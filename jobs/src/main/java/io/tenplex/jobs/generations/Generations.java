package io.tenplex.jobs.generations;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.util.List;
import java.util.OptionalLong;

/**
 * The saved-state generations of the jobs on one daemon. Training writes a rank's state under
 * {@code /job/<job>/save/<rank>/} (the prototype's layout) and then seals it for a step: the rank's
 * tree is snapshotted (bytes shared, later writes do not show through) to
 * {@code /job/<job>/generations/<step>/<rank>/} with a manifest of per-tensor checksums. Every daemon
 * of the cluster is told which ranks are sealed; when all {@code world} ranks of a step are, the
 * generation is complete and {@code /job/<job>/generation} names it. Until then readers keep
 * seeing the previous complete generation. Older complete generations than the previous one are
 * dropped.
 *
 * <p>What it was told of each step is in {@link KnownSaves}, the files that describe the generations
 * in {@link GenerationFiles}; {@link RankSeals} seals a rank, {@link GenerationDrops} drops generations.
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
    private final GenerationFiles files;
    /** What is known of each job's saves (sealed ranks anywhere in the cluster): guarded by this. */
    private final KnownSaves saves;
    private final RankSeals seals;
    private final GenerationDrops drops;

    private final LostGenerations lost = new LostGenerations();

    public Generations(TensorStore store) {
        this.store = store;
        this.files = new GenerationFiles(store);
        this.saves = new KnownSaves(store);
        this.seals = new RankSeals(store, files);
        this.drops = new GenerationDrops(store, saves, files, tiers, lost, listeners);
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
        KnownSaves.check(step, world);
        GenerationProgress p = saves.progress(job, step, world, config, List.of(rank), () -> current(job));
        return seals.seal(job, step, rank, world, p, saved);
    }

    /**
     * Records that {@code ranks} of a step are sealed somewhere in the cluster; completes the
     * generation when all are. Idempotent.
     *
     * @return whether the generation is complete
     */
    public synchronized boolean sealed(String job, long step, List<Integer> ranks, int world, JsonNode config)
            throws IOException {
        KnownSaves.check(step, world);
        GenerationProgress p = saves.progress(job, step, world, config, ranks, () -> current(job));
        p.sealed.addAll(ranks);
        if (!p.complete && p.sealed.size() == world) {
            complete(job, step, p);
        }
        return p.complete;
    }

    /**
     * Takes back a complete generation restored from the durable tier, whose rank trees are already in
     * the store under {@code generations/<step>/<rank>/}: writes its {@code generation.json} and the
     * ranks' manifests and records every rank as sealed; the newest restored step becomes current.
     * Listeners are not told (nothing new completed).
     */
    public synchronized void restored(String job, long step, int world, JsonNode config) throws IOException {
        KnownSaves.check(step, world);
        GenerationProgress p = new GenerationProgress(world, config == null || config.isMissingNode() ? null : config);
        for (int r = 0; r < world; r++) {
            p.sealed.add(r);
        }
        p.complete = true;
        saves.put(job, step, p);
        files.writeGeneration(job, step, p);
        for (Entry e : store.list(generationDir(job, step), false)) {
            if (e.type() == EntryType.DIR && numeric(e.name())) {
                int rank = Integer.parseInt(e.name());
                files.writeManifest(GenerationFiles.manifest(job, step, rank), SealManifests.of(store, e.path(), rank, step));
            }
        }
        OptionalLong current = current(job);
        if (current.isEmpty() || current.getAsLong() < step) {
            files.setCurrent(job, step);
        }
        tiers.reached(job, step, Tiers.MEMORY);
        notifyAll();
    }

    private void complete(String job, long step, GenerationProgress p) throws IOException {
        files.writeGeneration(job, step, p);
        OptionalLong previous = current(job);
        files.setCurrent(job, step);
        p.complete = true;
        if (store.stat(generationDir(job, step)).isPresent()) {
            tiers.reached(job, step, Tiers.MEMORY);
        }
        notifyAll(); // a lifecycle waiting for this save
        // keep the new generation and the one before it; drop older complete ones
        drops.olderThan(job, step, previous);
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
        return saves.jobs();
    }

    /** The step of the job's current complete generation, if any. */
    public OptionalLong current(String job) {
        return files.current(job, () -> newestComplete(job));
    }

    private synchronized OptionalLong newestComplete(String job) {
        return saves.newestComplete(job);
    }

    /** The steps of the job's complete generations older than {@code step} still on this daemon, newest first. */
    public synchronized List<Long> completeBefore(String job, long step) {
        return saves.completeBefore(job, step);
    }

    /** The configuration recorded with a complete generation (null when none was given). */
    public JsonNode config(String job, long step) throws IOException {
        JsonNode c = files.generationJson(job, step).path("config");
        return c.isMissingNode() ? null : c;
    }

    /** The number of ranks of a complete generation (from its {@code generation.json}). */
    public int world(String job, long step) throws IOException {
        return files.generationJson(job, step).path("world").asInt();
    }

    /** Forgets the job's saves' progress (its tree was removed; {@code Jobs.forget} forgets the rest). */
    public synchronized void forget(String job) { saves.forget(job); }

    /**
     * Drops generation {@code step}, newer than {@code back}, from this daemon: a recovery went back to
     * generation {@code back}, so the job's history after it is abandoned. Listeners hear
     * {@link Listener#superseded}; the current generation becomes {@code back}.
     */
    public synchronized void supersede(String job, long step, long back) {
        drops.supersede(job, step, back, () -> current(job));
    }

    /** What this daemon knows of a job's generations (its store, and the seals it was told of). */
    public synchronized GenerationsStatus describe(String job) {
        return GenerationsReport.describe(store, tiers, job, current(job), saves.of(job), lost.of(job));
    }

    /** Whether a name in a generation's directory is a rank's tree (decimal, at most 9 digits). */
    static boolean numeric(String name) {
        return !name.isEmpty() && name.length() < 10 && name.chars().allMatch(Character::isDigit);
    }
}
