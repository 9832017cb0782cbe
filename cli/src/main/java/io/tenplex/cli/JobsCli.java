package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code tenplex jobs}: the jobs a daemon holds, one line each, from its listing of {@code /job} and
 * each job's generations: the current (complete) generation and the (T,P,D) it was saved under, its
 * durable levels, the bytes of its trees on this daemon, and the newest step saved (complete or not); its
 * state ({@link RunRecord#of}: running, stopping, reconfiguring, finished, failed, cancelled) and the
 * reason of the last failure.
 */
@Command(name = "jobs", description = "The jobs this daemon holds: state (with the reason of the last failure), "
        + "current generation, its (T,P,D), durable levels, size and last save.")
final class JobsCli implements Callable<Integer> {
    @CommandLine.Mixin
    TenplexCli.Target t;

    @Override
    public Integer call() throws Exception {
        HttpResponse<String> root = t.send(t.request("/api/v1/dirs/job"));
        if (root.statusCode() == 404) {
            System.out.println("no jobs");
            return 0;
        }
        List<String> names = new ArrayList<>();
        for (JsonNode e : t.get("/api/v1/dirs/job").path("entries")) {
            if (e.path("type").asText().equals("dir")) {
                names.add(e.path("name").asText());
            }
        }
        if (names.isEmpty()) { // every job removed (tenplex rm) leaves /job empty
            System.out.println("no jobs");
            return 0;
        }
        System.out.printf(Locale.ROOT, "%-24s %-13s %-8s %-10s %-16s %-11s %-10s %s%n", "JOB", "STATE", "CURRENT",
                "(T,P,D)", "LEVELS", "SIZE", "LAST SAVE", "REASON");
        for (String job : names) {
            System.out.println(line(job));
        }
        return 0;
    }

    private String line(String job) throws Exception {
        String route = TenplexCli.encode("/" + job);
        JsonNode g = t.get("/api/v1/jobs" + route + "/generations");
        String current = g.path("current").isNumber() ? g.path("current").asText() : "-";
        String config = "-";
        String levels = "-";
        long last = -1;
        for (JsonNode gen : g.path("generations")) {
            last = Math.max(last, gen.path("step").asLong());
            if (gen.path("step").asText().equals(current)) {
                JsonNode c = gen.path("config");
                config = c.isObject() ? "(" + c.path("tp").asInt(1) + "," + c.path("pp").asInt(1) + ","
                        + c.path("dp").asInt(1) + ")" : "-";
                List<String> ls = new ArrayList<>();
                gen.path("levels").forEach(l -> ls.add(l.asText()));
                levels = ls.isEmpty() ? "-" : String.join(",", ls);
            }
        }
        long bytes = 0;
        for (JsonNode e : t.get("/api/v1/dirs/job" + route + "?recursive=true").path("entries")) {
            bytes += e.path("size").asLong(0);
        }
        String[] state = RunRecord.of(t, job);
        return String.format(Locale.ROOT, "%-24s %-13s %-8s %-10s %-16s %-11s %-10s %s", job, state[0], current, config,
                levels, Human.bytes(bytes), last < 0 ? "-" : "step " + last, state[1]).stripTrailing();
    }
}
