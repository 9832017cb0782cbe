package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Plan;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

/**
 * The checks of one reconfiguration before and while its parts run: every daemon involved answers and
 * no new shard is over one chunk, the old ranks' saved trees are listed on the daemons that hold them,
 * and, once the ranks rebuilt from parity are published, the values they carry agree too.
 */
final class SourceChecks {
    private final String job;
    private final String sourceDir;
    private final Plan plan;
    private final Ptc from;
    private final Map<Integer, InetSocketAddress> daemons;
    private final DaemonClient client;
    private final Rebuilding rebuilding;
    private final Map<Integer, String> origins;
    private final ChangeProgress progress;

    /** @param origins where each old rank is read, updated once the rebuilt ranks are published */
    SourceChecks(String job, String sourceDir, Plan plan, Ptc from, Map<Integer, InetSocketAddress> daemons,
            DaemonClient client, Rebuilding rebuilding, Map<Integer, String> origins, ChangeProgress progress) {
        this.job = job;
        this.sourceDir = sourceDir;
        this.plan = plan;
        this.from = from;
        this.daemons = daemons;
        this.client = client;
        this.rebuilding = rebuilding;
        this.origins = origins;
        this.progress = progress;
    }

    /** Every daemon involved answers its health check, and no new shard is over one chunk. */
    void checkDaemons() throws IOException, InterruptedException {
        for (int w : workersInvolved()) {
            if (!daemons.containsKey(w)) {
                throw new IOException("no daemon address for worker " + w);
            }
            try {
                client.health(daemons.get(w)).get();
            } catch (ExecutionException e) {
                throw new IOException("daemon of worker " + w + " at " + daemons.get(w) + " is unreachable: "
                        + e.getCause().getMessage(), e.getCause());
            }
        }
        PlanHeap.requireChunks(plan);
    }

    /** Once the ranks rebuilt from parity are published (checked), their carried values are compared too. */
    boolean rebuiltChecked(Map<Integer, CheckpointLayout> sources) throws InterruptedException {
        try {
            if (rebuilding.await(Rebuilding.TIMEOUT)) {
                origins.putAll(rebuilding.origins()); // a rank whose rebuild failed was read from its durable copy
                CarriedValues.requireEqual(plan, sources, client, new JobLayout(job, sourceDir, "load"), holders(),
                        java.util.Set.of());
            }
            return true;
        } catch (IOException | IllegalArgumentException e) {
            progress.fail(e.getMessage());
            return false;
        }
    }

    /** Lists every old rank's saved tree on the daemon of its worker (a rank with none saved nothing). */
    Map<Integer, CheckpointLayout> listSources() throws IOException, InterruptedException {
        Map<Integer, InetSocketAddress> listed = holders();
        listed.keySet().removeAll(rebuilding.pending()); // listed as their manifests say they will be published
        return rebuilding.withPending(SavedTrees.list(client, new JobLayout(job, sourceDir, "load"), listed));
    }

    /** The daemon of every old rank. */
    Map<Integer, InetSocketAddress> holders() {
        Map<Integer, InetSocketAddress> holders = new TreeMap<>();
        for (int r = 0; r < from.worldSize(); r++) {
            holders.put(r, daemons.get(from.device(r).worker()));
        }
        return holders;
    }

    private List<Integer> workersInvolved() {
        List<Integer> w = new ArrayList<>(plan.destWorkers());
        for (Device d : from.devices()) {
            if (!w.contains(d.worker())) {
                w.add(d.worker());
            }
        }
        return w;
    }
}
