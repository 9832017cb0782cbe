package io.tenplex.bench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/** Runs {@link RegionReadBenchmark} and prints GB/s medians and the region-read / memcpy ratio per run size. */
public final class RegionReadRatio {
    public static void main(String[] args) throws Exception {
        Options opt = new OptionsBuilder().include(RegionReadBenchmark.class.getSimpleName()).forks(1)
                .warmupIterations(3).warmupTime(TimeValue.seconds(1)).measurementIterations(7)
                .measurementTime(TimeValue.seconds(1)).jvmArgs("-Xmx512m", "-XX:MaxDirectMemorySize=4g").build();
        Collection<RunResult> results = new Runner(opt).run();
        System.out.println();
        for (String run : new String[] {"4", "64"}) {
            double read = median(results, "regionRead", run);
            double copy = median(results, "memcpy", run);
            double loop = median(results, "stridedLoop", run);
            System.out.printf(Locale.ROOT, "runs of %s KiB: region read %.2f GB/s, memcpy %.2f GB/s, ratio %.2f "
                    + "(hand-written strided loop %.2f GB/s, ratio %.2f)%n", run, read, copy, read / copy, loop,
                    loop / copy);
        }
    }

    private static double median(Collection<RunResult> results, String method, String run) {
        for (RunResult r : results) {
            if (r.getParams().getBenchmark().endsWith("." + method) && r.getParams().getParam("runKiB").equals(run)) {
                List<Double> s = new ArrayList<>();
                for (BenchmarkResult b : r.getBenchmarkResults()) {
                    for (IterationResult i : b.getIterationResults()) {
                        s.add(i.getPrimaryResult().getScore() * RegionReadBenchmark.BYTES / 1e9);
                    }
                }
                s.sort(null);
                return s.get(s.size() / 2);
            }
        }
        throw new IllegalStateException("no result for " + method + " " + run);
    }
}
