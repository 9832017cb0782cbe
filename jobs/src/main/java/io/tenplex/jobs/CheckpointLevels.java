package io.tenplex.jobs;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.reconfigure.FlowRates;
import io.tenplex.jobs.recovery.Recovery;
import io.tenplex.jobs.tiers.ErasureParity;
import io.tenplex.jobs.tiers.ErasureRebuild;
import io.tenplex.jobs.tiers.PartnerCopies;
import io.tenplex.store.TensorStore;
import java.util.function.LongSupplier;

/**
 * The checkpoint levels beyond a worker's memory that this daemon keeps of its jobs' generations, and
 * the recovery that reads them: L2 partner copies and L3 parity blocks, each listening to the
 * generations and paced to a share of the link, and the planning around lost workers over them (and
 * over the L4 durable copies this daemon can read).
 */
final class CheckpointLevels {
    private final PartnerCopies partnerCopies;
    private final ErasureParity erasureParity;
    private final Recovery recovery;

    /** Subscribes the levels to {@code generations} (partner copies first, then parity). */
    CheckpointLevels(TensorStore store, Generations generations, DaemonClient client, RangeReads reads,
            JobExecutors exec, ClusterDefaults cluster) {
        LongSupplier tierPace = () -> (long) (cluster.linkRate() * FlowRates.USABLE / 8 * PartnerCopies.LINK_SHARE);
        this.partnerCopies = new PartnerCopies(store, generations, client, reads, exec.background(),
                cluster::daemons, cluster::selfWorker, tierPace);
        generations.addListener(partnerCopies);
        this.erasureParity = new ErasureParity(store, generations, client, reads, exec.background(),
                cluster::daemons, cluster::selfWorker, tierPace);
        generations.addListener(erasureParity);
        this.recovery = new Recovery(generations, client, new ErasureRebuild(store, generations, client, reads),
                exec.background());
    }

    /** L2: the partner copies this daemon keeps of the generations of its jobs. */
    PartnerCopies partnerCopies() {
        return partnerCopies;
    }

    /** L3: the parity blocks this daemon keeps of the generations of its jobs. */
    ErasureParity erasureParity() {
        return erasureParity;
    }

    /** Planning around lost workers over these levels. */
    Recovery recovery() {
        return recovery;
    }
}
