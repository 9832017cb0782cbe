package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.adapters.Parallelizer;
import io.tenplex.adapters.Schedule;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.ParallelConfig;
import java.io.IOException;

/**
 * Where {@code tenplex run} starts a job: at the schedule's first entry when the job has no complete
 * generation; else (the same command run again, after Ctrl-C or a failure) from the job's newest
 * complete generation G, under the configuration its ranks will load, with the schedule's entries at
 * steps up to G skipped and no stop flag raised for a step already saved. An entry at step G whose
 * change did not commit (stopped during its move) is applied from generation G at once ({@code recover},
 * no save). A time schedule cannot be placed against a step: it starts at its first entry, refused when
 * the saved generation is under another configuration, as is a job name used again for another schedule
 * (its record, {@link RunRecord}, names the schedule of the run before).
 *
 * @param config the configuration the ranks start under
 * @param next the index of the schedule's first entry still to apply
 */
record Resume(ParallelConfig config, int next) {

    static Resume of(RunCli run, Schedule s, int perWorker, Parallelizer parallelizer, long start) throws Exception {
        Schedule.Entry first = s.entries().get(0);
        ParallelConfig scheduled = configOf(run, first, perWorker, parallelizer);
        JsonNode g = run.t.get(run.layout().api("/generations"));
        boolean again = run.previousRun != null && run.scheduleId.equals(run.previousRun.path("schedule").asText());
        if (!again || !g.path("current").isNumber() || !first.byStep()) { // a new job, or a name used again
            run.daemon.refuseOtherConfiguration(scheduled);
            return new Resume(scheduled, 1);
        }
        long current = g.path("current").asLong();
        ParallelConfig saved = savedConfig(g, current);
        int next = 1;
        while (next < s.entries().size() && s.entries().get(next).step() < current) {
            next++;
        }
        Schedule.Entry at = next < s.entries().size() && s.entries().get(next).step() == current ? s.entries().get(next)
                : null;
        ParallelConfig config = saved;
        if (at != null && !at.stops()) {
            ParallelConfig target = configOf(run, at, perWorker, parallelizer);
            config = committedAt(run, current) ? target : recover(run, at, target, perWorker, start);
            next++;
        } else if (at != null) {
            next++; // a stop entry at the saved step: the job had stopped there
        }
        run.log(start, "job " + run.job + " has generation " + current + " (saved under " + saved + "): resuming under "
                + config + " from it; " + (next - 1) + " schedule entr" + (next - 1 == 1 ? "y" : "ies")
                + " already applied" + (next < s.entries().size() ? ", next " + RunCli.what(s.entries().get(next))
                : ", none left"));
        return new Resume(config, next);
    }

    private static ParallelConfig configOf(RunCli run, Schedule.Entry e, int perWorker, Parallelizer parallelizer)
            throws IOException, InterruptedException {
        return e.config() != null ? e.config()
                : parallelizer.choose(new Parallelizer.Request(e.size(), perWorker, run.daemon.storedModel(), 0));
    }

    private static ParallelConfig savedConfig(JsonNode g, long step) {
        for (JsonNode gen : g.path("generations")) {
            if (gen.path("step").asLong() == step && gen.path("config").isObject()) {
                return ParallelConfigJson.parse(gen.path("config"), "generation " + step + " config ");
            }
        }
        throw new IllegalArgumentException("generation " + step + " was saved without its configuration: the run cannot "
                + "tell which configuration to resume under");
    }

    /** Whether a change committed at step {@code g}: what rank 0 loads is the reconfiguration's output of it. */
    private static boolean committedAt(RunCli run, long g) throws IOException, InterruptedException {
        var r = run.t.send(run.t.request(run.layout().apiLoad(0)));
        if (r.statusCode() != 200) {
            return false;
        }
        JsonNode l = TenplexCli.JSON.readTree(r.body());
        return l.path("source").asText().equals("reconfiguration") && l.path("step").asLong() == g;
    }

    /** Applies entry {@code at} (its step already saved) from the current generation, without a stop flag. */
    private static ParallelConfig recover(RunCli run, Schedule.Entry at, ParallelConfig target, int perWorker, long start)
            throws Exception {
        ObjectNode b = TenplexCli.JSON.createObjectNode();
        b.put("size", target.worldSize());
        b.put("devicesPerWorker", perWorker);
        b.set("config", ParallelConfigJson.write(target));
        b.put("recover", true);
        String id = run.t.post(run.layout().apiResources(), b.toString()).path("id").asText();
        run.log(start, RunCli.what(at) + ": its step is saved but its change did not commit; applying it from that "
                + "generation (resource change " + id + "; no rank runs until it commits)");
        JsonNode st = new ChangeEvents(run.t, run.layout().apiResourceChange(id), line -> run.log(start, line))
                .untilEnded();
        if (!st.path("state").asText().equals("done")) {
            throw new IllegalStateException("resuming job " + run.job + ": " + RunCli.what(at) + " could not be applied "
                    + "from its saved generation: " + st.path("error").asText());
        }
        return ParallelConfigJson.parse(st.path("config"), "config ");
    }
}
