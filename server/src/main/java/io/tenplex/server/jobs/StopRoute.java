package io.tenplex.server.jobs;

import io.tenplex.jobs.StopFlags;
import io.tenplex.server.ControlHandler;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * The prototype's {@code GET /stop[?job=J][&step=S]}: {@code stop} or {@code run} as plain text, as
 * the prototype's scheduler answers. Without {@code job}, any raised flag answers {@code stop} (the
 * prototype ran one job per scheduler).
 */
public final class StopRoute implements ControlHandler {
    /** The prototype's route. */
    public static final String PATH = "/stop";

    private final StopFlags flags;
    private final java.util.function.Consumer<String> requireKnown;

    /** Answers for any job name. */
    public StopRoute(StopFlags flags) {
        this(flags, job -> { });
    }

    /** @param requireKnown throws (a not-found {@code StoreException}) for a job the daemon does not know */
    public StopRoute(StopFlags flags, java.util.function.Consumer<String> requireKnown) {
        this.flags = flags;
        this.requireKnown = requireKnown;
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        if (!req.path().equals(PATH)) {
            return CompletableFuture.completedFuture(Response.text(404, "no route for " + req.method() + " " + req.path()));
        }
        if (!req.method().equals("GET")) {
            return CompletableFuture.completedFuture(Response.text(405, req.method() + " not allowed on /stop (GET)"));
        }
        try {
            OptionalLong step = StopFlags.step(req.param("step"));
            String job = req.param("job");
            if (job != null) {
                requireKnown.accept(io.tenplex.store.JobNamespace.requireValidName(job));
            }
            boolean stop = job == null ? flags.anyStops(step) : flags.askStop(job, step);
            return CompletableFuture.completedFuture(new Response(200, "text/plain; charset=utf-8",
                    (stop ? "stop" : "run").getBytes(StandardCharsets.UTF_8)));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
