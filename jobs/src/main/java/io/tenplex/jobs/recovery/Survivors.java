package io.tenplex.jobs.recovery;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.jobs.tiers.ErasureRebuild;
import io.tenplex.jobs.tiers.Ring;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.store.StorePath;
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
 * rank is read from a level that still has it, cheapest first: a surviving worker's ranks from its
 * own memory (L1), a lost worker's ranks from the first partner after it in the ring that holds a
 * complete copy (L2), rebuilt from its group's parity on this daemon (L3), or read from the lost
 * worker's durable directory on storage this daemon mounts (L4). The old configuration is re-placed
 * accordingly, so the planner and the parts never contact a lost daemon.
 */
public final class Survivors {
    static final String MEMORY = "memory";
    static final String PARTNER = "partner copy";
    static final String ERASURE = ErasureRebuild.PARITY;
    static final String DURABLE = ErasureRebuild.DURABLE;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Survivors.class);
    private static final long TIMEOUT_SECONDS = 10;
    private static final com.fasterxml.jackson.databind.ObjectMapper MANIFESTS = new com.fasterxml.jackson.databind
            .ObjectMapper();

    /** Where each old rank is read: its worker now, and from which level. */
    public record Origin(int worker, String level, int lostWorker) {
        /** The same rank on the same worker, brought back from {@code other} instead. */
        public Origin from(String other) {
            return new Origin(worker, other, lostWorker);
        }

        @Override
        public String toString() {
            return level.equals(MEMORY) ? "memory of worker " + worker
                    : level + " on worker " + worker + " (worker " + lostWorker + " lost)";
        }
    }

    /** Rebuilds a lost worker's ranks into the coordinator's replica tree (L3). */
    interface Rebuilder {
        /**
         * The rebuild of the lost workers of its group (the one asked for and others), checked to be
         * possible and under way (or done, or failed, when it ran in the caller's thread); none when the
         * job keeps no parity.
         */
        ErasureRebuild.Pending rebuild(int lostWorker, Set<Integer> lost) throws IOException, InterruptedException;
    }

    /** Reads a lost worker's ranks of a generation from its durable directory into this daemon's source tree (L4). */
    interface DiskReader {
        /**
         * Whether {@code ranks} (all the lost worker held) were read; false when no durable directory of
         * the worker holds them.
         */
        boolean read(int lostWorker, long step, Set<Integer> ranks) throws IOException;
    }

    /**
     * The levels a recovery may read from besides the survivors' memory.
     *
     * @param replicaTrees whether the job keeps replica trees (L2 or L3 on): the source is then
     *     {@code replicas/<step>}, else the generations themselves ({@code generations/<step>})
     * @param partners how many workers after a rank's worker in the ring keep a copy of it (L2)
     */
    record Levels(boolean replicaTrees, int partners, Rebuilder rebuilder, DiskReader disk) {
    }

    /** No level has a rank of the generation: an older generation may still be recovered. */
    static final class Unavailable extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        Unavailable(String message) {
            super(message);
        }
    }

    /**
     * The re-placed old configuration, the source directory, each rank's origin, per rank the
     * surviving workers that keep a complete partner copy of its tree (the planner reads there too),
     * and the ranks still being rebuilt from parity: per rank, its seal manifest and a future
     * completed with the level it was published from on this daemon (its lost worker's durable copy
     * when solving it failed); {@code release} says the asker reads nothing more of them (its change
     * committed or aborted), so what the rebuilds streamed can go.
     */
    public record Sources(Ptc from, String sourceDir, Map<Integer, Origin> origins, Map<Integer, List<Integer>> copies,
            Map<Integer, SealManifest> rebuilt, Map<Integer, CompletableFuture<String>> rebuilding, Runnable release) {
    }

    private Survivors() {
    }

    /**
     * The sources of generation {@code step} around lost workers, or null when every worker of
     * {@code from} answers.
     *
     * @throws IllegalArgumentException when {@code to} places ranks on a lost worker
     * @throws Unavailable when a rank has no copy on any level
     */
    static Sources around(String job, long step, Ptc from, Ptc to, Map<Integer, InetSocketAddress> daemons,
            DaemonClient client, OptionalInt self, Levels levels) throws IOException, InterruptedException {
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
        Map<Integer, String> recovered = new TreeMap<>(); // lost worker: the level its ranks were brought back from
        Rebuilds rebuilds = new Rebuilds();
        Copies found = levels.replicaTrees() && levels.partners() > 0
                ? copies(client, daemons, ring, lost, paths, step, from, levels.partners()) : Copies.NONE;
        Map<Integer, Integer> copies = CopyReads.assign(found.lostOnly(from, lost), found.bytes());
        for (int r = 0; r < from.worldSize(); r++) {
            int w = from.device(r).worker();
            if (!lost.contains(w)) {
                require(client, daemons.get(w), paths, step, r, w, levels.replicaTrees());
                devices.add(from.device(r));
                origins.put(r, new Origin(w, MEMORY, -1));
                continue;
            }
            int holder = recovered.containsKey(w) ? -1 : copies.getOrDefault(r, -1);
            String level = PARTNER;
            if (holder < 0) {
                level = elsewhere(self, levels, new Done(recovered, rebuilds), w, lost, step, ranksOf(from, w));
                holder = self.getAsInt();
            }
            devices.add(new Device(holder, spare + r)); // a device of its own: never mistaken for a kept shard
            origins.put(r, new Origin(holder, level, w));
        }
        Ptc placed = new Ptc(from.model(), from.config(), from.layout(), from.stages(), devices);
        return new Sources(placed, levels.replicaTrees() ? JobLayout.replicasDir(step) : Generations.sourceDir(step),
                origins, found.holders(), Map.copyOf(rebuilds.manifests), Map.copyOf(rebuilds.ranks),
                rebuilds::release);
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
            int worker, boolean replicaTrees) throws InterruptedException {
        StorePath manifest = replicaTrees ? paths.replicaManifest(step, rank) : paths.sealManifest(step, rank);
        if (!answers(client.readValue(a, manifest))) {
            throw new Unavailable("worker " + worker + " keeps no " + (replicaTrees ? "replica tree" : "memory copy")
                    + " of its rank " + rank + " of generation " + step + " (" + manifest + " is not there)");
        }
    }

    /** Per rank, the surviving workers keeping a complete partner copy of it (ring order), and its bytes. */
    record Copies(Map<Integer, List<Integer>> holders, Map<Integer, Long> bytes) {
        static final Copies NONE = new Copies(Map.of(), Map.of());

        /** The holders of the lost ranks' copies. */
        Map<Integer, List<Integer>> lostOnly(Ptc from, Set<Integer> lost) {
            Map<Integer, List<Integer>> out = new TreeMap<>();
            holders.forEach((rank, ws) -> {
                if (lost.contains(from.device(rank).worker())) {
                    out.put(rank, ws);
                }
            });
            return out;
        }
    }

    /**
     * The complete partner copies of every rank on the survivors: the first {@code partners} workers
     * after its worker in the ring that answer with the copy's manifest (asked all at once).
     */
    private static Copies copies(DaemonClient client, Map<Integer, InetSocketAddress> daemons, Ring ring,
            Set<Integer> lost, JobLayout paths, long step, Ptc from, int partners) throws InterruptedException {
        Map<Integer, Map<Integer, CompletableFuture<DaemonClient.SavedValue>>> asks = new TreeMap<>();
        for (int rank = 0; rank < from.worldSize(); rank++) {
            List<Integer> after = ring.after(from.device(rank).worker());
            for (int p : after.subList(0, Math.min(partners, after.size()))) {
                if (!lost.contains(p) && daemons.containsKey(p)) {
                    asks.computeIfAbsent(rank, x -> new java.util.LinkedHashMap<>()).put(p,
                            client.readValue(daemons.get(p), paths.replicaManifest(step, rank)));
                }
            }
        }
        Map<Integer, List<Integer>> holders = new TreeMap<>();
        Map<Integer, Long> bytes = new TreeMap<>();
        for (Map.Entry<Integer, Map<Integer, CompletableFuture<DaemonClient.SavedValue>>> e : asks.entrySet()) {
            for (Map.Entry<Integer, CompletableFuture<DaemonClient.SavedValue>> a : e.getValue().entrySet()) {
                Long size = manifestBytes(a.getValue());
                if (size != null) {
                    holders.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(a.getKey());
                    bytes.put(e.getKey(), size);
                }
            }
        }
        return new Copies(holders, bytes);
    }

    /** The bytes a copy's manifest names, or null when it does not answer within the timeout. */
    private static Long manifestBytes(CompletableFuture<DaemonClient.SavedValue> call) throws InterruptedException {
        try {
            byte[] m = call.get(TIMEOUT_SECONDS, TimeUnit.SECONDS).bytes();
            try {
                return MANIFESTS.readValue(m, SealManifest.class).bytes();
            } catch (IOException unreadable) {
                return 0L; // the copy is there; its size only weighs the choice
            }
        } catch (ExecutionException | TimeoutException e) {
            return null;
        }
    }

    /**
     * Brings back the ranks of lost worker {@code worker} on this daemon, once per lost worker: rebuilt
     * from parity (L3) or read from its durable directory (L4). @return the level they came from
     */
    private static String elsewhere(OptionalInt self, Levels levels, Done recovered, int worker,
            Set<Integer> lost, long step, Set<Integer> ranks) throws IOException, InterruptedException {
        Map<Integer, String> done = recovered.levels();
        String what = (ranks.size() == 1 ? "rank " + ranks.iterator().next() : "ranks " + ranks) + " of generation "
                + step + " were on lost worker " + worker + " and no surviving worker holds a copy (lost workers: "
                + lost + ")";
        if (self.isEmpty()) {
            throw new Unavailable(what + "; this daemon has no worker number to rebuild it on");
        }
        if (done.containsKey(worker)) {
            return done.get(worker);
        }
        String parity = "no parity";
        if (levels.replicaTrees()) {
            try {
                ErasureRebuild.Pending p = levels.rebuilder().rebuild(worker, lost);
                String failed = failure(p);
                if (failed != null) {
                    throw new IOException(failed);
                }
                for (int w : p.workers()) {
                    done.put(w, ERASURE);
                }
                recovered.rebuilds().add(p);
            } catch (IOException e) {
                parity = e.getMessage();
                LOG.warn("generation {}: no rebuild from parity of worker {}: {}", step, worker, parity);
            }
            if (done.containsKey(worker)) {
                return ERASURE;
            }
        }
        String disk = "nor in a durable directory this daemon reads";
        try {
            if (levels.disk().read(worker, step, ranks)) {
                done.put(worker, DURABLE);
                return DURABLE;
            }
        } catch (IOException e) {
            disk = "nor read from its durable directory (" + e.getMessage() + ")";
            LOG.warn("generation {}: no durable copy of worker {}: {}", step, worker, e.getMessage());
        }
        throw new Unavailable(what + "; not in partner copies, nor rebuilt from parity (" + parity + "), " + disk);
    }

    /** The ranks being rebuilt from parity, gathered over the lost workers. */
    private static final class Rebuilds {
        final Map<Integer, SealManifest> manifests = new TreeMap<>();
        final Map<Integer, CompletableFuture<String>> ranks = new TreeMap<>();
        final List<Runnable> releases = new ArrayList<>();

        void add(ErasureRebuild.Pending p) {
            manifests.putAll(p.manifests());
            ranks.putAll(p.ranks());
            releases.add(p.release());
        }

        void release() {
            releases.forEach(Runnable::run);
        }
    }

    /** Per lost worker the level its ranks come back from, and the rebuilds under way. */
    private record Done(Map<Integer, String> levels, Rebuilds rebuilds) {
    }

    /** Why a rebuild that already ended failed (it ran in the caller's thread), or null. */
    private static String failure(ErasureRebuild.Pending p) {
        for (CompletableFuture<String> f : p.ranks().values()) {
            if (f.isCompletedExceptionally()) {
                Throwable t = f.handle((v, e) -> e).join();
                Throwable c = t instanceof java.util.concurrent.CompletionException && t.getCause() != null
                        ? t.getCause() : t;
                return c.getMessage() == null ? c.toString() : c.getMessage();
            }
        }
        return null;
    }

    /** The ranks that {@code from} places on worker {@code worker}, ascending. */
    private static Set<Integer> ranksOf(Ptc from, int worker) {
        Set<Integer> out = new TreeSet<>();
        for (int r = 0; r < from.worldSize(); r++) {
            if (from.device(r).worker() == worker) {
                out.add(r);
            }
        }
        return out;
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
