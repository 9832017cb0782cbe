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

    /**
     * Every daemon involved answers its health check (at most {@link LocalTrees#IN_FLIGHT} asked at
     * once), and no new shard is over one chunk (checked here, or by each daemon for its own part when
     * {@code local}).
     */
    void checkDaemons(boolean local) throws IOException, InterruptedException {
        java.util.ArrayDeque<Map.Entry<Integer, java.util.concurrent.CompletableFuture<Void>>> asked =
                new java.util.ArrayDeque<>();
        for (int w : workersInvolved()) {
            if (!daemons.containsKey(w)) {
                throw new IOException("no daemon address for worker " + w);
            }
            if (asked.size() == LocalTrees.IN_FLIGHT) {
                healthy(asked.poll());
            }
            asked.add(Map.entry(w, client.health(daemons.get(w))));
        }
        while (!asked.isEmpty()) {
            healthy(asked.poll());
        }
        if (!local) {
            PlanHeap.requireChunks(plan);
        }
    }

    private void healthy(Map.Entry<Integer, java.util.concurrent.CompletableFuture<Void>> asked)
            throws IOException, InterruptedException {
        int w = asked.getKey();
        try {
            asked.getValue().get();
        } catch (ExecutionException e) {
            throw new IOException("daemon of worker " + w + " at " + daemons.get(w) + " is unreachable: "
                    + e.getCause().getMessage(), e.getCause());
        }
    }

    /** Once the ranks rebuilt from parity are published (checked), their carried values are compared too. */
    boolean rebuiltChecked(Map<Integer, CheckpointLayout> sources) throws InterruptedException {
        try {
            if (rebuilding.await(Rebuilding.TIMEOUT)) {
                origins.putAll(rebuilding.origins()); // a rank whose rebuild failed was read from its durable copy
                CarriedValues.requireEqual(plan, sources, client, job, sourceDir, holders(),
                        java.util.Set.of());
            }
            return true;
        } catch (IOException | IllegalArgumentException e) {
            progress.fail(e.getMessage());
            return false;
        }
    }

    /**
     * Every old rank's saved tree as a layout (a rank with none saved nothing): checked by the daemon
     * of its worker, which answers digests ({@link LocalTrees}) when {@code local}, else listed here;
     * the ranks being rebuilt from parity as their seal manifests say they will be published.
     */
    Map<Integer, CheckpointLayout> listSources(boolean local) throws IOException, InterruptedException {
        Map<Integer, InetSocketAddress> listed = holders();
        listed.keySet().removeAll(rebuilding.pending());
        return rebuilding.withPending(local ? LocalTrees.collect(client, job, sourceDir, listed)
                : SavedTrees.list(client, new JobLayout(job, sourceDir, "load"), listed));
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
