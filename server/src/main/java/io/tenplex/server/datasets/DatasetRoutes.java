package io.tenplex.server.datasets;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.ViewNode;
import io.tenplex.server.ControlHandler;
import io.tenplex.store.StoreException;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

/**
 * The dataset routes under {@code /api/v1/datasets/<job>}: {@code POST .../mount} (JSON: the index,
 * the mount parameters, the ranks served here and the peers to load from), {@code GET} (state and
 * loading statistics; {@code wait=<ms>} answers once loading has ended), {@code DELETE} (unmount),
 * {@code GET .../files/<path>} (a view file, {@code offset}/{@code length} optional; waits for
 * samples still loading) and {@code POST .../samples} (daemon to daemon: the loaded bytes of the
 * given samples, {@link SampleWire}). Mount requests are parsed and run on the service's request
 * threads, reads on its loader threads, never on the event loop.
 */
public final class DatasetRoutes implements ControlHandler {
    public static final String PREFIX = "/api/v1/datasets/";
    private static final Pattern JOB = Pattern.compile("[A-Za-z0-9._-]+");
    /** The most bytes one view read answers. */
    static final int MAX_READ = 64 << 20;

    private final DatasetService datasets;

    public DatasetRoutes(DatasetService datasets) {
        this.datasets = datasets;
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        try {
            String[] p = req.path().substring(PREFIX.length()).split("/", 3);
            String job = io.tenplex.store.JobNamespace.requireValidName(p[0]);
            if (!JOB.matcher(job).matches()) {
                throw new IllegalArgumentException("bad job name '" + job + "' for a dataset view (letters, digits, "
                        + "'.', '_' and '-' only)");
            }
            String what = p.length > 1 ? p[1] : "";
            return switch (req.method() + " " + what) {
                case "POST mount" -> datasets.mountAsync(job, () -> MountRequestJson.parse(DatasetJson.read(req.body())))
                        .thenApply(s -> DatasetJson.ok(DatasetJson.MountAnswer.of(s)));
                case "GET " -> datasets.statusAsync(job, longParam(req, "wait", 0))
                        .thenApply(s -> DatasetJson.ok(DatasetJson.StatusAnswer.of(s)));
                case "DELETE " -> unmount(job);
                case "POST samples" -> datasets.loadedSamplesAsync(job, SampleWire.ids(req.body()))
                        .thenApply(s -> new Response(200, "application/octet-stream", SampleWire.answer(s)));
                case "GET files" -> file(job, p.length > 2 ? p[2] : "", req);
                default -> throw StoreException.notFound("no dataset route " + req.method() + " " + req.path());
            };
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Mounts a job's dataset from a mount request's JSON, on the caller's thread (it blocks: never
     * on an event loop); the answer of {@code POST .../mount}.
     */
    Object mount(String job, JsonNode body) {
        return DatasetJson.MountAnswer.of(datasets.mount(job, MountRequestJson.parse(body)));
    }

    private CompletableFuture<Response> unmount(String job) {
        datasets.unmount(job);
        return CompletableFuture.completedFuture(Response.text(200, "unmounted " + job));
    }

    private CompletableFuture<Response> file(String job, String path, Request req) {
        ViewNode node = datasets.view(job, path);
        if (node.isDir()) {
            return CompletableFuture.completedFuture(Response.text(200, String.join("\n", node.children())));
        }
        long offset = longParam(req, "offset", 0);
        long length = longParam(req, "length", node.size() - Math.min(offset, node.size()));
        if (offset < 0 || length < 0 || length > MAX_READ) {
            throw new IllegalArgumentException("offset " + offset + " and length " + length
                    + " (expected: offset >= 0, 0 <= length <= 64 MiB)");
        }
        return datasets.readAsync(node, offset, (int) length)
                .thenApply(bytes -> new Response(200, "application/octet-stream", bytes));
    }

    private static long longParam(Request req, String name, long dflt) {
        String v = req.param(name);
        try {
            return v == null ? dflt : Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " '" + v + "' is not a number");
        }
    }
}
