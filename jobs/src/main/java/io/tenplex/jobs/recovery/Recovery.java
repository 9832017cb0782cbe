package io.tenplex.jobs.recovery;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.durable.DurableCopies;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.jobs.tiers.ErasureRebuild;
import io.tenplex.jobs.tiers.RebuildFallback;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.Ptc;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.OptionalInt;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Planning around lost workers: which generation can be recovered and where each of its ranks is
 * read ({@link Survivors}), with the levels the job keeps (L2 partner copies, L3 parity, and L4
 * durable directories this daemon can read).
 */
public final class Recovery {
    private static final Logger LOG = LoggerFactory.getLogger(Recovery.class);

    private final Generations generations;
    private final DaemonClient client;
    private final ErasureRebuild erasureRebuild;
    private final java.util.concurrent.Executor rebuilds;
    private volatile DurableCopies durableCopies = DurableCopies.NONE;

    /** @param rebuilds runs parity rebuilds (L3) while the redistribution around them goes on */
    public Recovery(Generations generations, DaemonClient client, ErasureRebuild erasureRebuild,
            java.util.concurrent.Executor rebuilds) {
        this.generations = generations;
        this.client = client;
        this.erasureRebuild = erasureRebuild;
        this.rebuilds = rebuilds;
    }

    public void setDurableCopies(DurableCopies copies) {
        this.durableCopies = copies;
    }

    /** The sources of the generation recovered, and the step of its state. */
    public record Sources(Survivors.Sources sources, long step) {
    }

    /** Whether a level besides the workers' memory may hold the job's ranks (L2, L3, or L4 others can read). */
    public boolean recoverable(String job) {
        Tiers.Settings t = generations.tiers().settings(job);
        return t.partners() > 0 || t.groupSize() > 0 || t.durableKeep() > 0 && durableCopies != DurableCopies.NONE;
    }

    /**
     * The sources around lost workers of generation {@code g}, or null when every worker answers. When
     * a rank of the job's current generation survives on no level (a durable copy older than it, say),
     * the newest older generation still here that every level has is recovered instead, and said so.
     *
     * @param dry whether only to plan: a lost worker's durable copy is then looked at, not read
     */
    public Sources aroundLost(ReconfigureRequest r, Model model, long g, Ptc from, Ptc to, boolean dry,
            Map<Integer, InetSocketAddress> daemons, OptionalInt self) throws IOException {
        Survivors.Unavailable first;
        try {
            Survivors.Sources s = around(r.job(), g, from, to, daemons, self, dry);
            return s == null ? null : new Sources(s, r.step().orElse(g));
        } catch (Survivors.Unavailable e) {
            if (generations.current(r.job()).orElse(-1) != g) {
                throw e;
            }
            first = e;
        }
        for (long older : generations.completeBefore(r.job(), g)) {
            JsonNode config = generations.config(r.job(), older);
            if (config == null || r.from() != null) {
                continue;
            }
            try {
                Survivors.Sources s = around(r.job(), older, ConfigJson.source(model, config), to, daemons, self, dry);
                LOG.warn("job={}: generation {} cannot be recovered ({}); recovering generation {}", r.job(), g,
                        first.getMessage(), older);
                return new Sources(s, older);
            } catch (Survivors.Unavailable e) {
                LOG.info("job={}: generation {} cannot be recovered either: {}", r.job(), older, e.getMessage());
            }
        }
        throw first;
    }

    /** The generation's sources around lost workers, or null when every worker of {@code from} answers. */
    private Survivors.Sources around(String job, long generation, Ptc from, Ptc to,
            Map<Integer, InetSocketAddress> daemons, OptionalInt self, boolean dry) throws IOException {
        Tiers.Settings t = generations.tiers().settings(job);
        boolean replicaTrees = t.partners() > 0 || t.groupSize() > 0;
        JobLayout paths = new JobLayout(job);
        DurableCopies copies = durableCopies;
        Survivors.DiskReader disk = (lost, step, ranks) -> {
            DurableCopies.Wanted w = new DurableCopies.Wanted(generations.world(job, step), generations.config(job, step),
                    ranks);
            return dry ? copies.has(lost, job, step, w) : copies.restore(lost, job, step, w, rank ->
                    replicaTrees ? paths.replica(step, rank) : paths.generation(step).child(Integer.toString(rank)));
        };
        try {
            return Survivors.around(job, generation, from, to, daemons, client, self, new Survivors.Levels(
                    replicaTrees, t.partners(), (lost, all) -> erasureRebuild.start(job, generation, lost, all, daemons,
                            dry ? Runnable::run : rebuilds, dry ? RebuildFallback.NONE
                                    : (worker, ranks) -> disk.read(worker, generation, ranks), !dry), disk));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while asking the daemons", e);
        }
    }
}
