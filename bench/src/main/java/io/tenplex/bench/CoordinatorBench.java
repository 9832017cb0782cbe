package io.tenplex.bench;

import io.tenplex.jobs.reconfigure.Rebuilding;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Plan;
import io.tenplex.transform.LocalPlanner;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * One reconfiguration of a GPT-3-175B-shaped job (as {@link PlannerBench}) through the coordinator's
 * whole path in this JVM, every daemon planning its own part: each daemon checks its own old ranks'
 * trees and answers digests, the coordinator posts the change's definition to every daemon (each asks
 * for the model and layouts it lacks, once per job), one daemon plans its own part for real and the
 * others answer its digest ({@link PlanningDaemons}), then prepare and commit. The daemons are
 * {@link CoordinatorBenchClient}: each old rank's listing is its flat tree of shards; a 10 Gbit/s
 * uplink carries what the coordinator sends. Prints the time of each phase, the definition's size,
 * one daemon's part and the heap after every GC at its highest; the same job's next change last (the
 * descriptions kept by the daemons). A change sends the model's description ahead, as plan ahead does
 * while the job trains; a recovery does not. Run with {@code -Xmx512m}, the daemon's heap.
 *
 * <p>With {@code --recover} the change is a recovery around a lost worker: the last worker of the
 * old configuration is gone and each of its ranks is read from its partner copy on the next worker in
 * the ring (one partner copy per rank), as {@code jobs.recovery.Survivors} re-places it; the new
 * configuration must leave that worker out.
 *
 * <p>Usage: {@code java -Xmx512m -cp bench/target/benchmarks.jar io.tenplex.bench.CoordinatorBench
 * [--recover] [T,P,D T,P,D [devicesPerWorker]]} (default {@code 8,8,64 8,4,128 8}: 4096 devices, 512
 * daemons; with {@code --recover}, {@code 8,8,64 8,8,63 8})
 */
public final class CoordinatorBench {
    private static final MegatronLayout.Shape GPT3 = MegatronLayout.Shape.gpt(96, 12288, 96, 50257, 2048);

    private CoordinatorBench() {
    }

    public static void main(String[] argv) throws Exception {
        boolean recover = java.util.Arrays.asList(argv).contains("--recover");
        String[] args = java.util.Arrays.stream(argv).filter(x -> !x.equals("--recover")).toArray(String[]::new);
        ParallelConfig a = args.length > 1 ? config(args[0]) : ParallelConfig.of(8, 8, 64);
        ParallelConfig b = args.length > 1 ? config(args[1]) : recover ? ParallelConfig.of(8, 8, 63)
                : ParallelConfig.of(8, 4, 128);
        int perWorker = args.length > 2 ? Integer.parseInt(args[2]) : 8;
        HeapWatch heap = HeapWatch.start();
        Ptc saved = Ptc.packed(model(a), a, perWorker);
        Ptc to = Ptc.packed(model(b), b, perWorker);
        Lost lost = recover ? Lost.last(saved, to) : null;
        Ptc from = lost != null ? lost.placed() : saved;
        Map<Integer, List<Integer>> copies = lost != null ? lost.copies() : Map.of();
        long t0 = System.nanoTime();
        Plan plan = LocalPlanner.planFor(from, to, copies, to.device(0).worker()); // the coordinator's own part
        double planned = (System.nanoTime() - t0) / 1e9;
        System.out.printf(Locale.ROOT, "%s -> %s on %d devices, %d per worker%s: the coordinator's own part planned"
                + " in %.2f s, %d shards, %d pieces%n", a, b, a.worldSize(), perWorker, lost == null ? ""
                        : ", worker " + lost.worker() + " lost (its ranks read from partner copies on worker "
                                + lost.holder() + ")", planned, plan.shards().size(), plan.pieceCount());
        Map<Integer, InetSocketAddress> daemons = new TreeMap<>();
        int workers = (Math.max(a.worldSize(), b.worldSize()) + perWorker - 1) / perWorker;
        for (int w = 0; w < workers; w++) {
            daemons.put(w, InetSocketAddress.createUnresolved("worker" + w, 20010));
        }
        CoordinatorBenchClient client = new CoordinatorBenchClient(saved, "bench", 10_000_000_000L);
        ExecutorService background = Executors.newCachedThreadPool();
        String label = lost == null ? "control plane" : "control plane, recovery";
        try {
            Reconfiguration.Defined defined = new Reconfiguration.Defined(model(a),
                    new io.tenplex.jobs.common.ConfigJson.Placed(b, to.devices()), copies);
            Reconfiguration.Source source = new Reconfiguration.Source(lost == null ? "save"
                    : io.tenplex.jobs.common.JobLayout.replicasDir(100), -1, 0, lost == null ? Map.of() : lost.origins(),
                    Rebuilding.NONE, defined);
            if (lost == null) { // a resource change plans ahead, and sends the model's description meanwhile
                sendAhead(model(a), from, to, daemons, client, background);
            }
            printLocal(label, a, workers, client, change("p1", plan, from, daemons, client, source, background));
            client.planning.count();
            System.out.println("the job's next change (its descriptions kept by the daemons):");
            printLocal(label, a, workers, client, change("p2", plan, from, daemons, client, source, background));
        } finally {
            background.shutdownNow();
            background.awaitTermination(10, TimeUnit.SECONDS);
            client.close();
        }
        System.out.printf(Locale.ROOT, "heap: max %d MiB, highest after a GC %d MiB (%d GCs)%n",
                Runtime.getRuntime().maxMemory() >> 20, heap.highestAfterGc() >> 20, heap.collections());
    }

    /**
     * A lost worker, as recovery sees it: its ranks re-placed on the worker after it in the ring (on
     * devices of their own), which keeps their partner copies; every rank's copy is on the worker after
     * its own.
     */
    private record Lost(int worker, int holder, Ptc placed, Map<Integer, List<Integer>> copies,
            Map<Integer, String> origins) {
        static Lost last(Ptc saved, Ptc to) {
            List<Integer> ring = saved.devices().stream().map(Device::worker).distinct().toList();
            int lost = ring.get(ring.size() - 1);
            if (to.devices().stream().anyMatch(d -> d.worker() == lost)) {
                throw new IllegalArgumentException("the new configuration places ranks on worker " + lost
                        + ", the lost one: give fewer devices");
            }
            int spare = saved.devices().stream().mapToInt(Device::local).max().orElse(0) + 1;
            List<Device> devices = new ArrayList<>();
            Map<Integer, List<Integer>> copies = new TreeMap<>();
            Map<Integer, String> origins = new TreeMap<>();
            for (int r = 0; r < saved.worldSize(); r++) {
                int w = saved.device(r).worker();
                int next = ring.get((ring.indexOf(w) + 1) % ring.size());
                if (next != lost) {
                    copies.put(r, List.of(next));
                }
                devices.add(w == lost ? new Device(next, spare + r) : saved.device(r));
                if (w == lost) {
                    origins.put(r, "worker " + next + " (partner copy; worker " + lost + " lost)");
                }
            }
            Ptc placed = new Ptc(saved.model(), saved.config(), saved.layout(), saved.stages(), devices);
            return new Lost(lost, ring.get(0), placed, copies, origins);
        }
    }

    /** Sends the model's description to the new placement's daemons, as plan ahead does ({@code DescriptionsAhead}). */
    private static void sendAhead(Model model, Ptc from, Ptc to, Map<Integer, InetSocketAddress> daemons,
            CoordinatorBenchClient client, ExecutorService background) {
        long t = System.nanoTime();
        new io.tenplex.jobs.reconfigure.DescriptionsAhead().planAhead(client, io.tenplex.jobs.reconfigure.LocalDefinition
                .ahead("bench", model, from, to, daemons), model, daemons, background).join();
        System.out.printf(Locale.ROOT, "plan ahead: the model's and the addresses' descriptions, then the change as known"
                + " ahead, sent to %d daemons in %.2f s, while the job trains (not downtime); %s%n",
                to.devices().stream().map(Device::worker).distinct().count(), (System.nanoTime() - t) / 1e9,
                client.planning.aheadSummary());
        client.planning.count();
    }

    /** Runs one change through the coordinator; prints its phases. */
    private static Reconfiguration change(String id, Plan plan, Ptc from, Map<Integer, InetSocketAddress> daemons,
            CoordinatorBenchClient client, Reconfiguration.Source source, ExecutorService background) throws Exception {
        long t1 = System.nanoTime();
        Reconfiguration r = new Reconfiguration("bench", id, plan, from, daemons, 100, client,
                source,
                new Reconfiguration.InDoubtInfo("", 0));
        r.start(background);
        r.finished().get();
        System.out.printf(Locale.ROOT, "coordinator: %s in %.2f s, phases (ms) %s%s%n", r.state(),
                (System.nanoTime() - t1) / 1e9, r.describe().phaseMillis(), r.error() == null ? "" : ", error: " + r.error());
        return r;
    }

    /**
     * When every daemon planned its own part: what each daemon was sent, the part planned for real, and
     * the control plane's share of the downtime: the coordinator's phases, whose execute phase waited
     * for the daemon that planned its part for real (daemons plan in parallel: one is the critical path).
     */
    private static void printLocal(String label, ParallelConfig a, int workers, CoordinatorBenchClient client,
            Reconfiguration r) {
        PlanningDaemons d = client.planning;
        Map<String, Long> ms = r.describe().phaseMillis();
        double downtime = ms.values().stream().mapToLong(Long::longValue).sum() / 1e3;
        System.out.printf(Locale.ROOT, "definitions: %d posted, %d bytes each; descriptions %d bytes per daemon,"
                + " once per job; worker %d planned its own part in %.3f s (again: %.3f s); %s%n", client.posted(),
                d.specBytes(), d.descriptionBytes() / Math.max(1, workers), d.plannedWorker(), d.partSeconds(),
                d.warmSeconds(), d.aheadSummary());
        System.out.printf(Locale.ROOT, "%s: devices %d, daemons %d, bytes/daemon %d, part %.3f s,"
                + " downtime %.2f s%n", label, a.worldSize(), workers, d.specBytes(), d.partSeconds(), downtime);
    }

    private static ParallelConfig config(String tpd) {
        String[] p = tpd.split(",");
        return ParallelConfig.of(Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2]));
    }

    private static Model model(ParallelConfig c) {
        return MegatronLayout.model(GPT3, c.pp());
    }
}
