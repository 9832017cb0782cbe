package io.tenplex.server.jobs;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.adapters.ResourceChange;
import io.tenplex.adapters.ResourceChangeStatus;
import io.tenplex.adapters.ResourceChanges;
import io.tenplex.adapters.downtime.DowntimeSplit;
import io.tenplex.adapters.downtime.RankReport;
import io.tenplex.server.ControlHandler;
import io.tenplex.store.StoreException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * {@code /api/v1/jobs/<job>/downtime} (the job routes hand it over): {@code POST} a rank's report of a
 * reconfiguration's downtime ({@link RankReport}: at most {@link RankReport#MAX_BODY_BYTES} bytes, else
 * 413; a malformed or out-of-range report, a rank outside the change's world or a time outside its window
 * 400; a job the daemon does not know, or a step no resource change of the job moved here, 404; a phase
 * the rank reported with another time 409; nothing is kept then: {@link ResourceChanges#reportDowntime}),
 * and {@code GET} the job's downtime status: each resource change kept, by generation, with its downtime
 * split. Work runs on the {@link PlanningPool}, never on the event loop.
 */
public final class DowntimeRoutes implements ControlHandler {
    public static final String SEGMENT = "downtime";

    /** The answer of a kept report ({@code kept} is always true) and the changes that kept it. */
    record Reported(boolean kept, List<String> changes) {
    }

    /** One resource change of the job's downtime status. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Reconfigured(String change, String state, Long generation, JsonNode from, JsonNode config,
            DowntimeSplit downtime) {
    }

    /** The job's downtime status: its changes kept now, by the generation they moved (running ones last). */
    record Status(String job, List<Reconfigured> reconfigurations) {
    }

    private final ResourceChanges changes;
    private final Consumer<String> requireKnown;
    private final PlanningPool work;
    private final ObjectMapper json = new ObjectMapper();

    /** @param requireKnown throws a not-found {@code StoreException} for a job the daemon does not know */
    DowntimeRoutes(ResourceChanges changes, Consumer<String> requireKnown, PlanningPool work) {
        this.changes = changes;
        this.requireKnown = requireKnown;
        this.work = work;
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        String[] p = req.path().split("/"); // "", api, v1, jobs, <job>, downtime
        if (p.length != 6 || !p[5].equals(SEGMENT)) {
            return CompletableFuture.failedFuture(StoreException.notFound("no downtime route " + req.method() + " "
                    + req.path()));
        }
        String job = p[4];
        return switch (req.method()) {
            case "POST" -> work.submit(() -> CompletableFuture.completedFuture(report(job, req)));
            case "GET" -> work.submit(() -> CompletableFuture.completedFuture(status(job)));
            default -> CompletableFuture.completedFuture(Response.text(405, req.method()
                    + " not allowed on a job's downtime (GET, POST)"));
        };
    }

    private Response report(String job, Request req) {
        if (req.body().length > RankReport.MAX_BODY_BYTES) {
            throw new StoreException(StoreException.Kind.TOO_LARGE, "a downtime report has at most "
                    + RankReport.MAX_BODY_BYTES + " bytes, got " + req.body().length);
        }
        requireKnown.accept(job);
        JsonNode b;
        try {
            b = json.readTree(req.body());
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("a downtime report must be JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return json(200, new Reported(true, changes.reportDowntime(job, RankReport.parse(b))));
    }

    private Response status(String job) {
        requireKnown.accept(job);
        List<Reconfigured> out = new ArrayList<>();
        for (ResourceChange c : changes.of(job)) {
            ResourceChangeStatus s = c.describe();
            out.add(new Reconfigured(s.id(), s.state(), s.generation(), s.from(), s.config(), s.downtime()));
        }
        out.sort(java.util.Comparator.comparing(r -> r.generation() == null ? Long.MAX_VALUE : r.generation()));
        return json(200, new Status(job, out));
    }

    private Response json(int status, Object o) {
        try {
            return new Response(status, "application/json", json.writeValueAsString(o).getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
