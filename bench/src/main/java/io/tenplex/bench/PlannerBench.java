package io.tenplex.bench;

import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Planning time and heap for a GPT-3-175B-shaped model (96 layers, hidden 12288, 96 heads, vocab
 * 50257, Adam state) on 8 GPUs per worker: the two 1024-device changes of the target, and the growth
 * of planning time from 64 to {@code maxDevices} (4096 unless given) devices. Run with {@code -Xmx512m}, the
 * daemon's heap ({@code bin/tenplexd}), to show the plan fits.
 *
 * <p>Usage: {@code java -Xmx512m -cp bench/target/benchmarks.jar io.tenplex.bench.PlannerBench [maxDevices]}
 */
public final class PlannerBench {
    private static final MegatronLayout.Shape GPT3 = MegatronLayout.Shape.gpt(96, 12288, 96, 50257, 2048);

    public static void main(String[] args) {
        System.out.printf(Locale.ROOT, "model: %d tensors, %.1f GiB of state%n", MegatronLayout.model(GPT3, 2).tensors()
                .size(), MegatronLayout.model(GPT3, 2).bytes() / (double) (1L << 30));
        int max = args.length > 0 ? Integer.parseInt(args[0]) : 4096;
        run(ParallelConfig.of(8, 16, 8), ParallelConfig.of(8, 8, 16));
        run(ParallelConfig.of(8, 16, 8), ParallelConfig.of(4, 16, 16));
        System.out.println("\nscaling (T=8, P 8 -> 4, D doubling):");
        for (int n = 64; n <= max; n *= 2) {
            run(ParallelConfig.of(8, 8, n / 64), ParallelConfig.of(8, 4, n / 32));
        }
    }

    private static void run(ParallelConfig a, ParallelConfig b) {
        Ptc from = Ptc.packed(model(a), a, 8);
        Ptc to = Ptc.packed(model(b), b, 8);
        List<Double> times = new ArrayList<>();
        Plan plan = null;
        for (int i = 0; i < 5; i++) {
            plan = null;
            long t0 = System.nanoTime();
            plan = Planner.plan(from, to);
            times.add((System.nanoTime() - t0) / 1e9);
        }
        System.gc();
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        times.sort(null);
        long pieces = plan.pieceCount();
        System.out.printf(Locale.ROOT, "%s -> %s on %d devices: plan %.3f s (median of 5, min %.3f), %d shards, %d pieces,"
                        + " heap after GC with the plan held %d MiB; %s%n", a, b, a.worldSize(), times.get(2), times.get(0),
                plan.shards().size(), pieces, heap >> 20, plan.report());
    }

    private static Model model(ParallelConfig c) {
        return MegatronLayout.model(GPT3, c.pp());
    }
}
