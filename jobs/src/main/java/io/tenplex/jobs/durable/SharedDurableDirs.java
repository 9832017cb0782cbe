package io.tenplex.jobs.durable;

import io.tenplex.jobs.durable.DurableCopies;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.IntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The durable directories of every worker, named by one pattern with {@value #WORKER} in it
 * ({@code --checkpoint-dir /shared/ckpt/worker-{worker}}): a daemon writes its own, and a coordinator
 * recovering around a lost worker reads the lost worker's. Only meaningful on storage every daemon
 * mounts; a directory that is not there (a lost machine's local disk) holds nothing.
 */
public final class SharedDurableDirs implements DurableCopies {
    /** The placeholder for the worker number. */
    public static final String WORKER = "{worker}";
    private static final Logger LOG = LoggerFactory.getLogger(SharedDurableDirs.class);

    private final String pattern;
    private final TensorStore store;

    private SharedDurableDirs(String pattern, TensorStore store) {
        this.pattern = pattern;
        this.store = store;
    }

    /** The directories of {@code pattern}, when it names the worker; empty otherwise. */
    public static Optional<SharedDurableDirs> of(Path pattern, TensorStore store) {
        return pattern != null && pattern.toString().contains(WORKER)
                ? Optional.of(new SharedDurableDirs(pattern.toString(), store)) : Optional.empty();
    }

    /** Worker {@code worker}'s directory. */
    public Path of(int worker) {
        if (worker < 0) {
            throw new IllegalArgumentException("no worker number for " + pattern);
        }
        return Path.of(pattern.replace(WORKER, Integer.toString(worker)));
    }

    @Override
    public boolean has(int worker, String job, long step, Wanted wanted) throws IOException {
        try {
            return holding(new DurableDir(of(worker)), job, step, wanted).isPresent();
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    @Override
    public boolean restore(int worker, String job, long step, Wanted wanted, IntFunction<StorePath> into)
            throws IOException {
        DurableDir dir = new DurableDir(of(worker));
        Optional<DurableManifest> m = holding(dir, job, step, wanted);
        if (m.isEmpty()) {
            return false;
        }
        try {
            long bytes = new Restorer(store, dir, BlockRepair.NONE).restore(m.get(), into);
            LOG.info("read the durable generation job={} step={} of worker {} from {}: ranks={} bytes={}", job, step,
                    worker, dir.root(), wanted.ranks(), bytes);
            return true;
        } catch (RuntimeException e) { // a manifest whose entries make no sense (shared storage: untrusted)
            throw new DamagedGenerationException("job=" + job + " step=" + step + " of worker " + worker + " in "
                    + dir.root() + ": " + e);
        }
    }

    /**
     * The manifest of generation {@code step} in {@code dir} cut down to the wanted ranks, when it is
     * complete, of the generation's world and configuration, and has every wanted rank.
     */
    private static Optional<DurableManifest> holding(DurableDir dir, String job, long step, Wanted wanted)
            throws IOException {
        Optional<DurableManifest> read = dir.read(job, step);
        if (read.isEmpty()) {
            return read;
        }
        DurableManifest m = read.get();
        Map<String, List<DurableManifest.Item>> ranks = new TreeMap<>();
        wanted.ranks().forEach(r -> {
            List<DurableManifest.Item> items = m.ranks().get(Integer.toString(r));
            if (items != null) {
                ranks.put(Integer.toString(r), items);
            }
        });
        String problem = m.world() != wanted.world() ? "a world of " + m.world() + ", not " + wanted.world()
                : !Objects.equals(m.config(), wanted.config()) ? "configuration " + m.config() + ", not " + wanted.config()
                : ranks.size() != wanted.ranks().size() ? "ranks " + m.ranks().keySet() + ", not all of " + wanted.ranks()
                : null;
        if (problem != null) {
            LOG.warn("the durable generation job={} step={} in {} is not the one recovered: it has {}", job, step,
                    dir.root(), problem);
            return Optional.empty();
        }
        return Optional.of(new DurableManifest(m.format(), m.version(), m.job(), m.step(), m.world(), m.config(),
                m.durableKeep(), m.logicalBytes(), m.bytesWritten(), ranks, m.levels()));
    }
}
