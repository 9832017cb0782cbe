package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.jobs.common.JobLayout;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code tenplex resize JOB --size N} (or {@code --tp/--pp/--dp}): posts a resource change to a running
 * job and follows it as {@code tenplex run} does, printing its events as they happen, until it has
 * committed (exit 0) or failed or was cancelled (exit 1). The job's {@code tenplex run} (with or without
 * a schedule) relaunches its ranks under the committed configuration; ranks stop at their next
 * {@code tenplex.should_stop} (or after {@code --at-step}).
 */
@Command(name = "resize", description = "Change a running job's size (or (T,P,D)) and follow the change to its end.")
final class ResizeCli implements Callable<Integer> {
    @CommandLine.Mixin
    TenplexCli.Target t;

    @Parameters(index = "0", paramLabel = "JOB", description = "The job.")
    String job;

    @Option(names = "--size", description = "The new number of devices (ranks); with --tp/--pp/--dp their product.")
    Integer size;

    @Option(names = "--tp", description = "Tensor-parallel degree of the new configuration.")
    Integer tp;

    @Option(names = "--pp", description = "Pipeline-parallel degree of the new configuration.")
    Integer pp;

    @Option(names = "--dp", description = "Data-parallel degree of the new configuration.")
    Integer dp;

    @Option(names = "--at-step", description = "The ranks stop after this many steps (default: at their next "
            + "should_stop).")
    Long atStep;

    @Option(names = "--devices-per-worker", description = "Devices per worker (default: the new size, one worker: the "
            + "host of tenplex run).")
    Integer devicesPerWorker;

    @Option(names = "--save-timeout", defaultValue = "600", description = "Seconds to wait for every rank to save "
            + "(default: ${DEFAULT-VALUE}).")
    long saveTimeout;

    @Override
    public Integer call() throws Exception {
        JobLayout layout = new JobLayout(job);
        ObjectNode b = body();
        JsonNode started = t.post(layout.apiResources(), b.toString());
        String id = started.path("id").asText();
        long start = System.nanoTime();
        java.util.function.Consumer<String> print = line -> System.out.printf(Locale.ROOT, "[tenplex resize %7.1fs] %s%n",
                (System.nanoTime() - start) / 1e9, line);
        print.accept("resource change " + id + " of job " + job + " to " + b.path("size").asInt() + " devices"
                + (b.has("config") ? " as (T,P,D)=(" + tp + "," + pp + "," + dp + ")" : "") + " posted; waiting for the "
                + "ranks to save" + (atStep != null ? " after step " + atStep : ""));
        ChangeEvents ev = new ChangeEvents(t, layout.apiResourceChange(id), print);
        Thread hook = new Thread(() -> cancel(layout, id), "tenplex-resize-stop"); // Ctrl-C takes a waiting change back
        Runtime.getRuntime().addShutdownHook(hook);
        JsonNode s;
        try {
            s = ev.untilEnded();
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // shutting down: the hook runs
            }
        }
        String state = s.path("state").asText();
        if (state.equals("done")) {
            print.accept("done: generation " + s.path("generation").asText() + " now under " + s.path("config"));
            return 0;
        }
        print.accept(state + ": " + s.path("error").asText("no reason given"));
        return 1;
    }

    /** Stopped by a signal: the change is cancelled if it still waits for the save (DELETE refuses it otherwise). */
    private void cancel(JobLayout layout, String id) {
        try {
            if (t.delete(layout.apiResourceChange(id)).statusCode() == 200) {
                System.out.println("tenplex resize: stopped; cancelled resource change " + id + " of job " + job);
            }
        } catch (Exception e) {
            System.out.println("tenplex resize: could not cancel resource change " + id + ": " + e.getMessage());
        }
    }

    /** The change's request, its options checked first (nothing is posted for a bad one). */
    private ObjectNode body() {
        boolean any = tp != null || pp != null || dp != null;
        if (any && (tp == null || pp == null || dp == null)) {
            throw new IllegalArgumentException("give all of --tp, --pp and --dp, or none (with --size)");
        }
        int n = any ? tp * pp * dp : size == null ? -1 : size;
        if (n < 1 || (any && (tp < 1 || pp < 1 || dp < 1))) {
            throw new IllegalArgumentException(size == null && !any ? "give --size N (or --tp, --pp and --dp)"
                    : "the new size must be >= 1 (tp, pp, dp >= 1)");
        }
        if (any && size != null && size != n) {
            throw new IllegalArgumentException("--tp*--pp*--dp = " + n + " but --size is " + size);
        }
        if (atStep != null && atStep < 0) {
            throw new IllegalArgumentException("--at-step must be >= 0, got " + atStep);
        }
        ObjectNode b = TenplexCli.JSON.createObjectNode();
        b.put("size", n);
        b.put("devicesPerWorker", devicesPerWorker != null ? devicesPerWorker : n);
        b.put("saveTimeoutSeconds", saveTimeout);
        if (atStep != null) {
            b.put("atStep", atStep);
        }
        if (any) {
            b.putObject("config").put("tp", tp).put("pp", pp).put("dp", dp);
        }
        return b;
    }
}
