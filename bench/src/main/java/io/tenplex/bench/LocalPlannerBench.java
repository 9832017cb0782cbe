package io.tenplex.bench;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.jobs.ChangeSpecCodec;
import io.tenplex.transform.LocalPlanner;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One daemon planning its own part of a change ({@link LocalPlanner}) against one coordinator planning
 * the whole change ({@link Planner}), for a GPT-3-175B-shaped model (96 layers, hidden 12288, Adam
 * state) on 8 GPUs per worker, T=8, P 8 -> 4, D doubling, to 16384 devices. The part's time includes
 * building both PTCs from the configurations, as a daemon does when a change is posted. Prints the
 * median of 5 parts (the first and a middle worker alternately), the whole plan's median of 3 (up to
 * {@code maxWhole} devices), the heap after a GC holding one part, and the busiest sender of both.
 *
 * <p>Usage: {@code java -Xmx512m -cp bench/target/benchmarks.jar io.tenplex.bench.LocalPlannerBench [maxDevices [maxWhole]]}
 */
public final class LocalPlannerBench {
    private static final MegatronLayout.Shape GPT3 = MegatronLayout.Shape.gpt(96, 12288, 96, 50257, 2048);

    public static void main(String[] args) {
        int max = args.length > 0 ? Integer.parseInt(args[0]) : 16384;
        int maxWhole = args.length > 1 ? Integer.parseInt(args[1]) : 4096;
        System.out.println("| devices | daemons | pieces | whole plan (one coordinator) | own part (one daemon) | own pieces"
                + " | heap after GC holding a part | busiest sender, part's balance / whole plan's | change definition"
                + " (bytes per daemon) |");
        System.out.println("|---|---|---|---|---|---|---|---|---|");
        for (int n = 512; n <= max; n *= 2) {
            run(ParallelConfig.of(8, 8, n / 64), ParallelConfig.of(8, 4, n / 32), n <= maxWhole);
        }
    }

    private static void run(ParallelConfig a, ParallelConfig b, boolean whole) {
        int daemons = a.worldSize() / 8;
        List<Double> part = new ArrayList<>();
        Plan mine = null;
        for (int i = 0; i < 5; i++) {
            mine = null;
            long t0 = System.nanoTime();
            Ptc from = Ptc.packed(model(a), a, 8);
            Ptc to = Ptc.packed(model(b), b, 8);
            mine = LocalPlanner.planFor(from, to, i % 2 == 0 ? 0 : daemons / 2);
            part.add((System.nanoTime() - t0) / 1e9);
        }
        System.gc();
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        part.sort(null);
        String wholeTime = "not run";
        String pieces = "";
        String balance = "";
        if (whole) {
            Ptc from = Ptc.packed(model(a), a, 8);
            Ptc to = Ptc.packed(model(b), b, 8);
            List<Double> times = new ArrayList<>();
            Plan plan = null;
            for (int i = 0; i < 3; i++) {
                plan = null;
                long t0 = System.nanoTime();
                plan = Planner.plan(from, to);
                times.add((System.nanoTime() - t0) / 1e9);
            }
            times.sort(null);
            wholeTime = String.format(Locale.ROOT, "%.3f s", times.get(1));
            pieces = String.format(Locale.ROOT, "%,d", plan.pieceCount());
            balance = String.format(Locale.ROOT, ", %.4f", mine.report().maxSent() / (double) plan.report().maxSent());
        }
        System.out.printf(Locale.ROOT, "| %s -> %s: %d | %d | %s | %s | **%.3f s** | %,d | %d MiB | %s%s | %,d |%n", a,
                b, a.worldSize(), daemons, pieces, wholeTime, part.get(2), mine.pieceCount(), heap >> 20,
                String.format(Locale.ROOT, "%.2f GiB", mine.report().maxSent() / (double) (1L << 30)), balance,
                definitionBytes(a, b));
    }

    /** The change's definition as daemons exchange it ({@link ChangeSpecCodec}), with an address per worker. */
    private static int definitionBytes(ParallelConfig a, ParallelConfig b) {
        List<io.tenplex.ptc.Device> from = Ptc.packedDevices(a.worldSize(), 8);
        List<io.tenplex.ptc.Device> to = Ptc.packedDevices(b.worldSize(), 8);
        java.util.Map<Integer, String> daemons = new java.util.TreeMap<>();
        to.forEach(d -> daemons.put(d.worker(), "10.1." + (d.worker() >> 8) + "." + (d.worker() & 255) + ":20010"));
        List<Integer> participants = List.copyOf(daemons.keySet());
        ChangeSpec c = new ChangeSpec("gpt3", "r1-0123456789abcdef", 150_000, "ab".repeat(32),
                new ConfigJson.Placed(a, from), new ConfigJson.Placed(b, to), daemons, java.util.Map.of(), "gen/150000",
                100_000_000_000L, participants, "10.1.0.0:20010", 60_000,
                List.of("01".repeat(32), "02".repeat(32), "03".repeat(32)), from.stream().map(d -> 1).toList());
        return ChangeSpecCodec.encode(c).getSerializedSize();
    }

    private static Model model(ParallelConfig c) {
        return MegatronLayout.model(GPT3, c.pp());
    }
}
