package io.tenplex.daemon;

import io.tenplex.adapters.ResourceChanges;
import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.server.datasets.HttpRehearsalPeers;
import io.tenplex.server.datasets.RehearsalResize;
import io.tenplex.server.datasets.RehearsalRoutes;
import io.tenplex.server.jobs.JobRoutes;
import io.tenplex.server.peer.DaemonLink;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;

/**
 * Wires the rehearsal buffers: the service (its peers: the cluster's daemons, {@code --peers}; other
 * daemons only on hosts allowed with {@code --allow-source-host}), its
 * routes under the job routes, and the re-partition after every resource change's commit.
 */
final class Rehearsal {
    /** The most bytes of representatives one daemon holds in its heap, all jobs together. */
    static final long BUDGET = 1L << 30;

    private Rehearsal() {
    }

    /** @param work where the routes run (a cached pool: a re-partition waits for other daemons there) */
    static RehearsalService wire(DaemonConfig cfg, DaemonLink link, ResourceChanges changes, JobRoutes routes,
            ExecutorService work) {
        RehearsalService service = new RehearsalService(new HttpRehearsalPeers(link), Math.min(BUDGET,
                Runtime.getRuntime().maxMemory() / 2));
        List<String> peers = new ArrayList<>();
        cfg.peers().values().forEach(a -> peers.add(a.getHostString() + ":" + a.getPort()));
        List<String> fixed = List.copyOf(peers);
        service.setPeers(() -> fixed);
        service.setAllowedHosts(cfg.sources()::allowsHost); // the other daemons a re-partition may call
        routes.addGroup("rehearsal", new RehearsalRoutes(service, work));
        changes.addCommitListener(new RehearsalResize(service, cfg::peers));
        return service;
    }
}
