package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.store.JobNamespace;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code tenplex rm JOB}: removes a job from every daemon of its cluster (the daemon asked and its
 * peers): its whole tree (saves, generations, copies, what ranks load), its stop flag, its streams,
 * dataset mounts, rehearsal buffers, shared-memory handouts and durable files, so a new job of the name
 * starts clean. Refused while a reconfiguration or resource change of the job runs (then
 * {@code tenplex cancel JOB}), and for a job the daemon does not know.
 */
@Command(name = "rm", description = "Remove a job from every daemon of its cluster: its tree, stop flag, streams, "
        + "dataset mounts, rehearsal buffers and durable files.")
final class RmCli implements Callable<Integer> {
    @CommandLine.Mixin
    TenplexCli.Target t;

    @Parameters(index = "0", paramLabel = "JOB", description = "The job.")
    String job;

    @Override
    public Integer call() throws Exception {
        JobNamespace.requireValidName(job); // never DELETE /api/v1/jobs/ (every job) for an empty or odd name
        HttpResponse<String> r = t.delete("/api/v1/jobs" + TenplexCli.encode("/" + job));
        if (r.statusCode() != 200) {
            throw new IllegalArgumentException(error(r));
        }
        JsonNode a = TenplexCli.JSON.readTree(r.body());
        List<String> what = new ArrayList<>();
        what.add(Human.bytes(a.path("here").path("treeBytes").asLong()) + " of its tree");
        a.path("here").path("resources").forEach(x -> what.add(x.asText()));
        System.out.println("removed job " + job + " here (" + String.join("; ", what) + ")");
        for (JsonNode d : a.path("daemons")) {
            System.out.println("removed job " + job + " on " + d.asText());
        }
        return 0;
    }

    /** The daemon's reason (its JSON {@code error}, or the text it answered). */
    private String error(HttpResponse<String> r) {
        String body = r.body().strip();
        try {
            JsonNode e = TenplexCli.JSON.readTree(body);
            if (e != null && e.path("error").isTextual()) {
                body = e.path("error").asText();
            }
        } catch (java.io.IOException notJson) {
            // a text answer
        }
        return "cannot remove job " + job + " (daemon answered " + r.statusCode() + "): " + body;
    }
}
