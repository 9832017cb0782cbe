package io.tenplex.jobs.durable;

import io.tenplex.jobs.DurableCopies;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
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
    public boolean has(int worker, String job, long step) {
        try {
            return new DurableDir(of(worker)).complete(job, step);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    @Override
    public Set<Integer> restore(int worker, String job, long step, IntFunction<StorePath> into) throws IOException {
        DurableDir dir = new DurableDir(of(worker));
        Optional<DurableManifest> m = dir.read(job, step);
        if (m.isEmpty()) {
            return Set.of();
        }
        long bytes = new Restorer(store, dir, BlockRepair.NONE).restore(m.get(), into);
        Set<Integer> ranks = new TreeSet<>();
        m.get().ranks().keySet().forEach(r -> ranks.add(Integer.parseInt(r)));
        LOG.info("read the durable generation job={} step={} of worker {} from {}: ranks={} bytes={}", job, step, worker,
                dir.root(), ranks, bytes);
        return ranks;
    }
}
