package io.tenplex.bench;

import io.tenplex.jobs.reconfigure.Rebuilding;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * One reconfiguration of a GPT-3-175B-shaped job (as {@link PlannerBench}) through the coordinator's
 * whole path in this JVM: plan, list every old rank's saved tree, compare carried values, bind the
 * plan to the saved paths, split it into one part per destination daemon, encode each part as the
 * protobuf message the daemons exchange ({@code PlanCodec}), then prepare and commit. The daemons are
 * {@link CoordinatorBenchClient}: each old rank's listing is its flat tree of shards, and each part's
 * body is held until a 10 Gbit/s uplink has sent it. Prints the time of each phase, the heap after
 * every GC at its highest, and the largest part. Run with {@code -Xmx512m}, the daemon's heap.
 *
 * <p>Usage: {@code java -Xmx512m -cp bench/target/benchmarks.jar io.tenplex.bench.CoordinatorBench
 * [T,P,D T,P,D [devicesPerWorker]]} (default {@code 8,8,64 8,4,128 8}: 4096 devices, 512 daemons)
 */
public final class CoordinatorBench {
    private static final MegatronLayout.Shape GPT3 = MegatronLayout.Shape.gpt(96, 12288, 96, 50257, 2048);

    private CoordinatorBench() {
    }

    public static void main(String[] argv) throws Exception {
        boolean local = java.util.Arrays.asList(argv).contains("--local");
        String[] args = java.util.Arrays.stream(argv).filter(x -> !x.equals("--local")).toArray(String[]::new);
        ParallelConfig a = args.length > 1 ? config(args[0]) : ParallelConfig.of(8, 8, 64);
        ParallelConfig b = args.length > 1 ? config(args[1]) : ParallelConfig.of(8, 4, 128);
        int perWorker = args.length > 2 ? Integer.parseInt(args[2]) : 8;
        HeapWatch heap = HeapWatch.start();
        Ptc from = Ptc.packed(model(a), a, perWorker);
        Ptc to = Ptc.packed(model(b), b, perWorker);
        long t0 = System.nanoTime();
        Plan plan = local ? io.tenplex.transform.LocalPlanner.planFor(from, to, to.device(0).worker())
                : Planner.plan(from, to); // planned by every daemon: the coordinator plans one part, for the report
        double planned = (System.nanoTime() - t0) / 1e9;
        System.out.printf(Locale.ROOT, "%s -> %s on %d devices, %d per worker: plan %.2f s, %d shards, %d pieces%n",
                a, b, a.worldSize(), perWorker, planned, plan.shards().size(), plan.pieceCount());
        Map<Integer, InetSocketAddress> daemons = new TreeMap<>();
        int workers = (Math.max(a.worldSize(), b.worldSize()) + perWorker - 1) / perWorker;
        for (int w = 0; w < workers; w++) {
            daemons.put(w, InetSocketAddress.createUnresolved("worker" + w, 20010));
        }
        CoordinatorBenchClient client = new CoordinatorBenchClient(from, "bench", 10_000_000_000L);
        ExecutorService background = Executors.newCachedThreadPool();
        try {
            Reconfiguration.Defined defined = local ? new Reconfiguration.Defined(model(a),
                    new io.tenplex.jobs.common.ConfigJson.Placed(b, to.devices()), Map.of()) : null;
            Reconfiguration r = change("p1", plan, from, daemons, client, defined, background);
            if (local) {
                printLocal(a, workers, client, r);
                client.planning.count();
                System.out.println("the job's next change (its descriptions kept by the daemons):");
                printLocal(a, workers, client, change("p2", plan, from, daemons, client, defined, background));
            } else {
                System.out.printf(Locale.ROOT, "parts: %d posted, %d encoded bytes in all, largest %d bytes (%d pieces),"
                        + " at most %d bytes in flight%n", client.posted(), client.encodedBytes(), client.largestPart(),
                        client.largestPieces(), client.mostInFlight());
            }
        } finally {
            background.shutdownNow();
            background.awaitTermination(10, TimeUnit.SECONDS);
            client.close();
        }
        System.out.printf(Locale.ROOT, "heap: max %d MiB, highest after a GC %d MiB (%d GCs)%n",
                Runtime.getRuntime().maxMemory() >> 20, heap.highestAfterGc() >> 20, heap.collections());
    }

    /** Runs one change through the coordinator; prints its phases. */
    private static Reconfiguration change(String id, Plan plan, Ptc from, Map<Integer, InetSocketAddress> daemons,
            CoordinatorBenchClient client, Reconfiguration.Defined defined, ExecutorService background) throws Exception {
        long t1 = System.nanoTime();
        Reconfiguration r = new Reconfiguration("bench", id, plan, from, daemons, 100, client,
                new Reconfiguration.Source("save", -1, 0, Map.of(), Rebuilding.NONE, defined),
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
    private static void printLocal(ParallelConfig a, int workers, CoordinatorBenchClient client, Reconfiguration r) {
        PlanningDaemons d = client.planning;
        Map<String, Long> ms = r.describe().phaseMillis();
        double downtime = ms.values().stream().mapToLong(Long::longValue).sum() / 1e3;
        System.out.printf(Locale.ROOT, "definitions: %d posted, %d bytes each; descriptions %d bytes per daemon,"
                + " once per job; worker %d planned its own part in %.3f s (again: %.3f s)%n", client.posted(),
                d.specBytes(), d.descriptionBytes() / Math.max(1, workers), d.plannedWorker(), d.partSeconds(),
                d.warmSeconds());
        System.out.printf(Locale.ROOT, "control plane: devices %d, daemons %d, bytes/daemon %d, part %.3f s,"
                + " downtime %.2f s%n", a.worldSize(), workers, d.specBytes(), d.partSeconds(), downtime);
    }

    private static ParallelConfig config(String tpd) {
        String[] p = tpd.split(",");
        return ParallelConfig.of(Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2]));
    }

    private static Model model(ParallelConfig c) {
        return MegatronLayout.model(GPT3, c.pp());
    }
}
