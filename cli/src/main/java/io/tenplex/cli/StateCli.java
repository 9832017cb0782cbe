package io.tenplex.cli;

import io.tenplex.client.TenplexClient;
import io.tenplex.client.nd4j.Export;
import io.tenplex.client.nd4j.StateComparison;
import io.tenplex.jobs.common.JobLayout;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/** {@code tenplex verify} and {@code tenplex export}: numeric tools over saved states (ND4J). */
final class StateCli {
    private StateCli() {
    }

    /** {@code JOB@STEP} names a generation ({@code /job/JOB/generations/STEP}); anything else is a store path. */
    static String prefix(String spec) {
        int at = spec.lastIndexOf('@');
        if (at > 0 && !spec.startsWith("/")) {
            String step = spec.substring(at + 1);
            if (!step.chars().allMatch(Character::isDigit) || step.isEmpty()) {
                throw new IllegalArgumentException("'" + spec + "': the step after @ must be a number");
            }
            return new JobLayout(spec.substring(0, at)).generation(Long.parseLong(step)).toString();
        }
        return spec.startsWith("/") ? spec : "/" + spec;
    }

    static TenplexClient client(TenplexCli.Target t) {
        io.tenplex.server.peer.DaemonLink link = t.link();
        return TenplexClient.over(t.addr, link.http(), link.token(), link.tls());
    }

    @Command(name = "verify", description = "Compare two saved states numerically (ND4J): the largest differences per tensor.")
    static final class Verify implements Callable<Integer> {
        @CommandLine.Mixin
        TenplexCli.Target t;

        @Parameters(index = "0", paramLabel = "A", description = "JOB@STEP (a generation) or a store path.")
        String a;

        @Parameters(index = "1", paramLabel = "B", description = "JOB@STEP or a store path (the reference).")
        String b;

        @Option(names = "--rtol", defaultValue = "1e-9", description = "Relative tolerance (default: ${DEFAULT-VALUE}).")
        double rtol;

        @Option(names = "--atol", defaultValue = "0", description = "Absolute tolerance (default: ${DEFAULT-VALUE}).")
        double atol;

        @Option(names = "--top", defaultValue = "20", description = "Tensors to list, largest relative difference first (default: ${DEFAULT-VALUE}).")
        int top;

        @Override
        public Integer call() {
            TenplexClient c = client(t);
            var left = c.tensors(prefix(a));
            var right = c.tensors(prefix(b));
            if (left.isEmpty() && right.isEmpty()) {
                throw new IllegalArgumentException("no tensors below " + prefix(a) + " or " + prefix(b));
            }
            List<StateComparison.Result> rs = StateComparison.compare(left, right, rtol, atol);
            List<StateComparison.Result> shown = rs.stream().sorted(Comparator.comparing(
                    (StateComparison.Result r) -> r.ok()).thenComparing(r -> -(Double.isNaN(r.maxRelDiff())
                            ? Double.MAX_VALUE : r.maxRelDiff()))).limit(top).toList();
            System.out.printf(Locale.ROOT, "%-60s %-18s %12s %12s %10s%n", "tensor", "shape", "max |a-b|", "max rel", "violations");
            for (StateComparison.Result r : shown) {
                if (r.problem() != null) {
                    System.out.printf(Locale.ROOT, "%-60s %-18s %s%n", r.name(), r.shape(), r.problem());
                } else {
                    System.out.printf(Locale.ROOT, "%-60s %-18s %12.3e %12.3e %10d%n", r.name(), r.shape(), r.maxAbsDiff(),
                            r.maxRelDiff(), r.violations());
                }
            }
            long bad = rs.stream().filter(r -> !r.ok()).count();
            System.out.printf(Locale.ROOT, "%d tensors compared (rtol %.1e, atol %.1e): %s%n", rs.size(), rtol, atol,
                    bad == 0 ? "all within tolerance" : bad + " outside tolerance");
            return bad == 0 ? 0 : 1;
        }
    }

    @Command(name = "export", description = "Write a copy of a saved state with its floating-point tensors cast (ND4J).")
    static final class ExportCmd implements Callable<Integer> {
        @CommandLine.Mixin
        TenplexCli.Target t;

        @Parameters(index = "0", paramLabel = "SOURCE", description = "JOB@STEP (a generation) or a store path.")
        String source;

        @Option(names = "--dtype", required = true, description = "bf16, f16 or f32.")
        String dtype;

        @Option(names = "--to", description = "Target path (default: /job/JOB/exports/STEP-DTYPE, or SOURCE-DTYPE).")
        String to;

        @Override
        public Integer call() {
            String from = prefix(source);
            String target = to != null ? prefix(to) : from.contains("/generations/")
                    ? from.replace("/generations/", "/exports/") + "-" + dtype : from + "-" + dtype;
            TenplexClient c = client(t);
            if (c.list(from).isEmpty()) {
                throw new IllegalArgumentException("nothing saved below " + from);
            }
            int cast = Export.export(c, from, target, dtype);
            System.out.println("exported " + from + " to " + target + ": " + cast + " tensors cast to " + dtype
                    + ", tensors now " + Export.dtypes(c.tensors(target)));
            return 0;
        }
    }
}
