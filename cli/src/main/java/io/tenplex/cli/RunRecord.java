package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpRequest;
import java.util.List;

/**
 * What {@code tenplex run} says of its job on the daemon, for {@code tenplex jobs}: {@code running}
 * while it runs (with the launcher's pid and host), then {@code finished}, {@code failed} (with the
 * reason) or {@code cancelled} (stopped by a signal). Kept as the job's file {@code run.json}; a failure
 * to write it is printed and never fails the run.
 */
final class RunRecord {
    /** The job's states as {@code tenplex jobs} shows them. */
    static final List<String> STATES = List.of("running", "stopping", "reconfiguring", "finished", "failed", "cancelled");

    private final RunCli run;

    RunRecord(RunCli run) {
        this.run = run;
    }

    static String path(String job) {
        return "/api/v1/files" + TenplexCli.encode("/job/" + job + "/run.json");
    }

    /** Records {@code state} ({@link #STATES}) with {@code reason} (null: none). */
    void write(String state, String reason) {
        ObjectNode r = TenplexCli.JSON.createObjectNode();
        r.put("state", state);
        if (reason != null) {
            r.put("reason", reason);
        }
        ObjectNode l = r.putObject("launcher");
        l.put("pid", ProcessHandle.current().pid());
        l.put("host", host());
        r.put("updatedAtMillis", System.currentTimeMillis());
        if (run.scheduleId != null) {
            r.put("schedule", run.scheduleId);
        }
        try {
            var res = run.t.send(run.t.request(path(run.job) + "?replace=true").PUT(HttpRequest.BodyPublishers.ofString(
                    r.toString())));
            if (res.statusCode() >= 300) {
                run.out.println("tenplex run: could not record the job's state '" + state + "': " + res.statusCode() + " "
                        + res.body().strip());
            }
        } catch (Exception e) {
            run.out.println("tenplex run: could not record the job's state '" + state + "': " + e.getMessage());
        }
    }

    /** The job's record as the last run left it, or null (none, or not readable as one). */
    static JsonNode read(TenplexCli.Target t, String job) {
        try {
            var r = t.send(t.request(path(job)));
            return r.statusCode() == 200 ? TenplexCli.JSON.readTree(r.body()) : null;
        } catch (Exception e) {
            return null;
        }
    }

    static String host() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            return "localhost";
        }
    }

    /**
     * The state of a job as {@code tenplex jobs} shows it, with the reason (or ""): a change in progress
     * ({@code stopping}, {@code reconfiguring}) or a raised stop flag first; then what its launcher
     * recorded, {@code running} becoming {@code failed} when the launcher ran on this host and is gone;
     * without a record, the last change's {@code failed} or {@code cancelled}, else "-".
     */
    static String[] of(TenplexCli.Target t, String job) throws Exception {
        String api = "/api/v1/jobs" + TenplexCli.encode("/" + job);
        JsonNode changes = t.get(api + "/resources").path("changes");
        JsonNode last = changes.isEmpty() ? null : changes.get(changes.size() - 1);
        for (JsonNode c : changes) {
            String s = c.path("state").asText();
            if (s.equals("stopping") || s.equals("reconfiguring")) {
                return new String[] {s, "resource change " + c.path("id").asText()};
            }
        }
        JsonNode flag = t.get(api + "/stop");
        if (flag.path("raised").asBoolean()) {
            return new String[] {"stopping", flag.path("reason").asText("")};
        }
        var r = t.send(t.request(path(job)));
        if (r.statusCode() == 200) {
            JsonNode rec = TenplexCli.JSON.readTree(r.body());
            String state = rec.path("state").asText("-");
            JsonNode l = rec.path("launcher");
            if (state.equals("running") && l.path("host").asText().equals(host())
                    && ProcessHandle.of(l.path("pid").asLong()).map(p -> !p.isAlive()).orElse(true)) {
                return new String[] {"failed", "its launcher (tenplex run, pid " + l.path("pid").asLong()
                        + ") is gone without recording an end"};
            }
            String reason = rec.path("reason").asText("");
            if (reason.isEmpty() && last != null && !last.path("state").asText().equals("done")) {
                reason = lastChange(t, last)[1]; // running (or finished) after a change that did not commit
            }
            return new String[] {STATES.contains(state) ? state : "-", reason};
        }
        return last != null && !last.path("state").asText().equals("done") ? lastChange(t, last) : new String[] {"-", ""};
    }

    /** A change that ended without a commit: its state and "resource change ID STATE: ERROR". */
    private static String[] lastChange(TenplexCli.Target t, JsonNode listed) throws Exception {
        JsonNode s = t.get(listed.path("status").asText());
        return new String[] {s.path("state").asText(), "resource change " + listed.path("id").asText() + " "
                + s.path("state").asText() + ": " + s.path("error").asText("")};
    }
}
