package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.adapters.Schedule;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The job of {@code tenplex run} as the daemon holds it: declared before the ranks start, its saved
 * generations and model spec read, the schedule's entries posted (a resource change, or the stop
 * flag alone) and a posted change cancelled.
 */
final class JobOnDaemon {
    private final RunCli run;

    JobOnDaemon(RunCli run) {
        this.run = run;
    }

    /**
     * Refuses to start when the job already has a complete generation saved under another (T,P,D)
     * than the schedule's first: its ranks would load state cut for another configuration (a job
     * name used again; the job's state stays on the daemon after it ends).
     */
    void refuseOtherConfiguration(ParallelConfig config) throws IOException, InterruptedException {
        JsonNode g = run.t.get(run.layout().api("/generations"));
        if (!g.path("current").isNumber()) {
            return;
        }
        long current = g.path("current").asLong();
        for (JsonNode gen : g.path("generations")) {
            JsonNode c = gen.path("config");
            if (gen.path("step").asLong() == current && c.isObject() && (c.path("tp").asInt(1) != config.tp()
                    || c.path("pp").asInt(1) != config.pp() || c.path("dp").asInt(1) != config.dp())) {
                throw new IllegalArgumentException("job " + run.job + " already has generation " + current + ", saved under "
                        + "(T,P,D)=(" + c.path("tp").asInt(1) + "," + c.path("pp").asInt(1) + "," + c.path("dp").asInt(1)
                        + "), and the schedule starts with " + config + ": its ranks would load state cut for another "
                        + "configuration; run under another --job, or remove the finished job first with tenplex rm " + run.job
                        + " (tenplex jobs lists the daemon's jobs)");
            }
        }
    }

    /** "generation N" (the last complete one) or "the start" when there is none yet. */
    String lastGeneration() {
        try {
            JsonNode g = run.t.get(run.layout().api("/generations"));
            return g.path("current").isNumber() ? "generation " + g.path("current").asLong() : "the start (no complete "
                    + "generation yet)";
        } catch (Exception e) {
            return "the last complete generation";
        }
    }

    /**
     * Creates the job's tree on the daemon ({@code PUT /api/v1/dirs/job/<job>}): the daemon refuses
     * resource changes and stop-flag queries for jobs it does not know, and this one's first save may
     * come only after the schedule's first change.
     */
    void declareJob() throws IOException, InterruptedException {
        String dir = "/api/v1/dirs" + TenplexCli.encode(run.layout().root().toString());
        var r = run.t.send(run.t.request(dir).PUT(java.net.http.HttpRequest.BodyPublishers.noBody()));
        if (r.statusCode() >= 300) {
            throw new IllegalArgumentException("cannot create job " + run.job + " on " + run.t.addr + ": " + r.statusCode()
                    + " " + r.body().strip());
        }
    }

    io.tenplex.ptc.Model storedModel() throws IOException, InterruptedException {
        if (run.model != null) {
            return ModelSpecJson.parse(TenplexCli.readText(run.model, "--model"));
        }
        var r = run.t.send(run.t.request("/api/v1/files" + run.layout().modelSpec()));
        return r.statusCode() == 200 ? ModelSpecJson.parse(r.body()) : null;
    }

    /**
     * Posts the entry to the daemon: a resource change (its id) from {@code running}, the configuration
     * the ranks run under, or for size 0 the stop flag alone (null).
     * A change for the entry that the daemon already has waiting (posted by the run before this one, or
     * kept across the daemon's restart) is followed instead, announced through {@code log}.
     */
    String post(Schedule.Entry e, ParallelConfig running, int perWorker, Path table,
            java.util.function.Consumer<String> log) throws IOException, InterruptedException {
        ObjectNode b = TenplexCli.JSON.createObjectNode();
        if (e.byStep()) {
            b.put("atStep", e.step());
        }
        if (e.stops()) {
            b.put("reason", "schedule: stop at " + e.when());
            run.stopRaised = true;
            run.t.post(run.layout().apiStop(), b.toString());
            return null;
        }
        String waiting = waitingFor(e);
        if (waiting != null) {
            log.accept("resource change " + waiting + " for " + e.when() + " is already waiting on the daemon (posted "
                    + "before, or kept across the daemon's restart): following it");
            return waiting;
        }
        b.put("size", e.size());
        b.put("devicesPerWorker", perWorker);
        b.put("saveTimeoutSeconds", run.saveTimeout);
        b.set("from", ParallelConfigJson.placement(running, io.tenplex.ptc.Ptc.packedDevices(running.worldSize(),
                perWorker))); // the ranks run under it: the daemon plans ahead even before their first save
        if (e.config() != null) {
            b.set("config", ParallelConfigJson.write(e.config()));
        } else if (table != null) {
            b.putObject("parallelizer").set("table", TenplexCli.readJson(table, "--para-config"));
        }
        return run.t.post(run.layout().apiResources(), b.toString()).path("id").asText();
    }

    /**
     * The id of a change of the job still waiting for its save at the entry's step, for the entry's number
     * of devices (and its configuration, where the entry names one and the change has chosen), or null.
     */
    private String waitingFor(Schedule.Entry e) throws IOException, InterruptedException {
        if (!e.byStep()) {
            return null;
        }
        for (JsonNode c : run.t.get(run.layout().apiResources()).path("changes")) {
            if (!c.path("state").asText().equals("stopping")) {
                continue;
            }
            JsonNode s = run.t.get(c.path("status").asText());
            JsonNode chosen = s.path("config");
            boolean sameConfig = e.config() == null || !chosen.isObject() || (chosen.path("tp").asInt(1) == e.config().tp()
                    && chosen.path("pp").asInt(1) == e.config().pp() && chosen.path("dp").asInt(1) == e.config().dp());
            if (s.path("atStep").asLong(-1) == e.step() && s.path("devices").size() == e.size() && sameConfig) {
                return c.path("id").asText();
            }
        }
        return null;
    }

    /**
     * Why the ranks, all exited, did not stop for {@code next}, read from the job's raised stop flag (call
     * it before the change is cancelled: the flag goes with it): the script never asks it, asked it only
     * before the step, or asked it and ended without a save.
     */
    NotStopped whyNotStopped(Schedule.Entry next) { // next: null for a change that is not the schedule's
        JsonNode f;
        try {
            f = run.t.get(run.layout().apiStop());
        } catch (Exception e) {
            return new NotStopped(false, "the ranks ended before it (the stop flag cannot be read: " + e.getMessage() + ")");
        }
        JsonNode a = f.path("asks");
        if (!f.path("raised").asBoolean() || !a.isObject()) {
            return new NotStopped(false, "the ranks ended before it");
        }
        long count = a.path("count").asLong();
        if (count == 0) {
            return new NotStopped(true, "the ranks ended and no rank asked the stop flag since it was raised: does the "
                    + "script call tenplex.should_stop(job, step) before each step (docs/CLIENTS.md)?");
        }
        if (a.path("highestStep").isNumber() && next != null && next.byStep() && a.path("highestStep").asLong() < next.step()) {
            return new NotStopped(false, "the ranks ended after step " + a.path("highestStep").asLong() + ", before "
                    + next.when());
        }
        return new NotStopped(false, "the ranks asked the stop flag (" + count + " times) but ended without saving for "
                + "it: does the script save (tenplex.save) and exit when tenplex.should_stop says stop?");
    }

    /** Why the ranks did not stop for an entry; {@code neverAsked}: no rank read the stop flag at all. */
    record NotStopped(boolean neverAsked, String why) {
    }

    /** The ids of the job's resource changes the daemon keeps now. */
    java.util.Set<String> changeIds() throws IOException, InterruptedException {
        java.util.Set<String> out = new java.util.HashSet<>();
        run.t.get(run.layout().apiResources()).path("changes").forEach(c -> out.add(c.path("id").asText()));
        return out;
    }

    /**
     * A resource change of the job that is not in {@code known} (posted by someone else, as {@code tenplex
     * resize}, while the ranks ran), announced through {@code log}; null when there is none.
     */
    String newChange(java.util.Set<String> known, java.util.function.Consumer<String> log)
            throws IOException, InterruptedException {
        for (JsonNode c : run.t.get(run.layout().apiResources()).path("changes")) {
            String id = c.path("id").asText();
            if (!known.contains(id)) {
                log.accept("resource change " + id + " was posted for job " + run.job + " while its ranks ran (tenplex "
                        + "resize): following it");
                return id;
            }
        }
        return null;
    }

    /** Devices per worker of a change's new devices ({@code devices}: [[worker, device], ...]), else {@code fallback}. */
    static int devicesPerWorker(JsonNode status, int fallback) {
        java.util.Map<Integer, Integer> perWorker = new java.util.HashMap<>();
        status.path("devices").forEach(d -> perWorker.merge(d.path(0).asInt(), 1, Integer::sum));
        return perWorker.values().stream().mapToInt(Integer::intValue).max().orElse(fallback);
    }

    void cancel(String change) {
        if (change == null) {
            return;
        }
        try {
            run.t.delete(run.layout().apiResourceChange(change));
        } catch (Exception e) {
            run.out.println("could not cancel resource change " + change + ": " + e.getMessage());
        }
    }
}
