package io.tenplex.jobs;

import io.tenplex.jobs.tiers.Ring;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Recovery onto the surviving workers: when daemons of a generation's workers do not answer, every
 * rank is read from the replica trees ({@link JobLayout#replicas}) of survivors: a surviving worker's
 * ranks from its own memory, a lost worker's ranks from the first partner after it in the ring that
 * holds a complete copy. The old configuration is re-placed accordingly, so the planner and the
 * parts never contact a lost daemon.
 */
final class Survivors {
    static final String MEMORY = "memory";
    static final String PARTNER = "partner copy";
    static final String ERASURE = "rebuilt from parity";
    private static final long TIMEOUT_SECONDS = 10;

    /** Where each old rank is read: its worker now, and from which level. */
    record Origin(int worker, String level, int lostWorker) {
        @Override
        public String toString() {
            return level.equals(MEMORY) ? "memory of worker " + worker
                    : level + " on worker " + worker + " (worker " + lostWorker + " lost)";
        }
    }

    /** Rebuilds a lost worker's ranks into the coordinator's replica tree (L3); false when the job keeps no parity. */
    interface Rebuilder {
        /** The lost workers whose ranks were rebuilt (the one asked for and others of its group), or none. */
        Set<Integer> rebuild(int lostWorker, Set<Integer> lost) throws IOException, InterruptedException;
    }

    /** The re-placed old configuration, the source directory and each rank's origin. */
    record Sources(Ptc from, String sourceDir, Map<Integer, Origin> origins) {
    }

    private Survivors() {
    }

    /**
     * The sources of generation {@code step} around lost workers, or null when every worker of
     * {@code from} answers.
     *
     * @throws IllegalArgumentException when {@code to} places ranks on a lost worker, or a rank has
     *     no complete copy on any survivor
     */
    static Sources around(String job, long step, Ptc from, Ptc to, Map<Integer, InetSocketAddress> daemons,
            DaemonClient client, OptionalInt self, Rebuilder rebuilder) throws IOException, InterruptedException {
        Set<Integer> lost = lost(from, daemons, client);
        if (lost.isEmpty()) {
            return null;
        }
        for (Device d : to.devices()) {
            if (lost.contains(d.worker())) {
                throw new IllegalArgumentException("the new configuration places ranks on worker " + d.worker()
                        + ", whose daemon does not answer (lost workers: " + lost + "); give devices on the survivors");
            }
        }
        JobLayout paths = new JobLayout(job);
        Ring ring = new Ring(from.devices().stream().map(Device::worker).toList());
        int spare = from.devices().stream().mapToInt(Device::local).max().orElse(0) + 1;
        List<Device> devices = new ArrayList<>();
        Map<Integer, Origin> origins = new TreeMap<>();
        Set<Integer> rebuiltWorkers = new TreeSet<>();
        for (int r = 0; r < from.worldSize(); r++) {
            int w = from.device(r).worker();
            if (!lost.contains(w)) {
                require(client, daemons.get(w), paths, step, r, w);
                devices.add(from.device(r));
                origins.put(r, new Origin(w, MEMORY, -1));
                continue;
            }
            int holder = rebuiltWorkers.contains(w) ? -1 : holder(client, daemons, ring, lost, paths, step, r, w);
            String level = PARTNER;
            if (holder < 0) {
                holder = rebuilt(self, rebuilder, rebuiltWorkers, w, lost, step, r);
                level = ERASURE;
            }
            devices.add(new Device(holder, spare + r)); // a device of its own: never mistaken for a kept shard
            origins.put(r, new Origin(holder, level, w));
        }
        Ptc placed = new Ptc(from.model(), from.config(), from.layout(), from.stages(), devices);
        return new Sources(placed, JobLayout.replicasDir(step), origins);
    }

    private static Set<Integer> lost(Ptc from, Map<Integer, InetSocketAddress> daemons, DaemonClient client)
            throws InterruptedException {
        Map<Integer, CompletableFuture<Void>> asks = new TreeMap<>();
        for (Device d : from.devices()) {
            InetSocketAddress a = daemons.get(d.worker());
            if (a != null && !asks.containsKey(d.worker())) {
                asks.put(d.worker(), client.health(a));
            }
        }
        Set<Integer> lost = new TreeSet<>();
        for (Map.Entry<Integer, CompletableFuture<Void>> e : asks.entrySet()) {
            if (!answers(e.getValue())) {
                lost.add(e.getKey());
            }
        }
        return lost;
    }

    private static void require(DaemonClient client, InetSocketAddress a, JobLayout paths, long step, int rank,
            int worker) throws InterruptedException {
        if (!answers(client.readValue(a, paths.replicaManifest(step, rank)))) {
            throw new IllegalArgumentException("worker " + worker + " keeps no replica tree of its rank " + rank
                    + " of generation " + step + " (" + paths.replica(step, rank) + "): recovering around a lost "
                    + "worker needs partner copies (tiers \"partners\" >= 1) in place on every survivor");
        }
    }

    private static int holder(DaemonClient client, Map<Integer, InetSocketAddress> daemons, Ring ring, Set<Integer> lost,
            JobLayout paths, long step, int rank, int worker) throws InterruptedException {
        for (int p : ring.after(worker)) {
            if (!lost.contains(p) && daemons.containsKey(p)
                    && answers(client.readValue(daemons.get(p), paths.replicaManifest(step, rank)))) {
                return p;
            }
        }
        return -1;
    }

    /** This daemon's worker, once it has rebuilt the lost worker's ranks (once per lost worker). */
    private static int rebuilt(OptionalInt self, Rebuilder rebuilder, Set<Integer> done, int worker, Set<Integer> lost,
            long step, int rank) throws IOException, InterruptedException {
        String what = "rank " + rank + " of generation " + step + " was on lost worker " + worker
                + " and no surviving worker holds a complete copy of it (lost workers: " + lost + ")";
        if (self.isEmpty()) {
            throw new IllegalArgumentException(what + "; this daemon has no worker number to rebuild it on");
        }
        if (!done.contains(worker)) {
            Set<Integer> rebuilt = rebuilder.rebuild(worker, lost);
            if (!rebuilt.contains(worker)) {
                throw new IllegalArgumentException(what);
            }
            done.addAll(rebuilt);
        }
        return self.getAsInt();
    }

    /** Whether the call succeeds within the timeout. */
    private static boolean answers(CompletableFuture<?> call) throws InterruptedException {
        try {
            call.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return true;
        } catch (ExecutionException | TimeoutException e) {
            return false;
        }
    }
}
