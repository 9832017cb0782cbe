package io.tenplex.server.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.shared.SharedSaves;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.server.ControlHandler.Request;
import io.tenplex.server.ControlHandler.Response;
import io.tenplex.store.StoreException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The shared-memory routes of a job, under {@code /api/v1/jobs/<job>/shared}: {@code POST
 * saves/<rank>} reserves (JSON {@code pid}, {@code start}, {@code lease}, {@code tensors}), {@code
 * POST saves/<rank>/<id>/commit} publishes and seals (the seal's body plus {@code files}, base64),
 * {@code POST loads/<rank>} pins what the rank loads, {@code DELETE <id>} ends a reservation or pin,
 * {@code GET} lists them. Without shared memory every route answers 503 ({@code unavailable}): the
 * client then saves over REST.
 */
final class SharedRoutes {
    static final long DEFAULT_LEASE_SECONDS = 600;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The directory swept for segment files of earlier versions, and what is open and kept. */
    record Overview(String dir, long keptBytes, long liveSegments, List<SharedSaves.Handout> open) {
    }

    private final SharedSaves shared;
    private final JobRoutes replies;

    /** @param shared null when the daemon has no shared memory */
    SharedRoutes(SharedSaves shared, JobRoutes replies) {
        this.shared = shared;
        this.replies = replies;
    }

    /** Routes {@code p} = [job, "shared", ...]; the work runs on the caller's (planning) thread. */
    CompletableFuture<Response> handle(String job, String[] p, Request req) throws IOException {
        if (shared == null) {
            throw new StoreException(StoreException.Kind.UNAVAILABLE, "this daemon has no shared memory (started with "
                    + "--shm-dir none, or the directory is missing); save and load over REST");
        }
        String m = req.method();
        String key = (p.length > 2 ? p[2] : "") + "/" + p.length;
        switch (key) {
            case "/2":
                return get(m, () -> new Overview(shared.segments().dir().toString(), shared.segments().keptBytes(),
                        shared.segments().liveSegments(), shared.describe(job)));
            case "saves/4":
                return post(m, () -> reserve(job, JobRequests.rank(p[3]), JobRequests.object(req)));
            case "saves/6":
                if (p[5].equals("commit") && m.equals("POST")) {
                    return commit(job, JobRequests.rank(p[3]), p[4], JobRequests.object(req));
                }
                break;
            case "loads/4":
                return m.equals("POST") ? pin(job, JobRequests.rank(p[3]), JobRequests.object(req))
                        .thenApply(pinned -> replies.json(201, pinned)) : notAllowed(m);
            default:
                if (p.length == 3 && m.equals("DELETE")) {
                    shared.release(job, p[2]);
                    return CompletableFuture.completedFuture(replies.json(200, Map.of("released", p[2])));
                }
        }
        throw StoreException.notFound("no shared-memory route " + m + " " + req.path());
    }

    private interface Work {
        Object run() throws IOException;
    }

    private CompletableFuture<Response> get(String method, Work w) throws IOException {
        return method.equals("GET") ? CompletableFuture.completedFuture(replies.json(200, w.run())) : notAllowed(method);
    }

    private CompletableFuture<Response> post(String method, Work w) throws IOException {
        return method.equals("POST") ? CompletableFuture.completedFuture(replies.json(201, w.run())) : notAllowed(method);
    }

    private static CompletableFuture<Response> notAllowed(String method) {
        return CompletableFuture.completedFuture(Response.text(405, method + " not allowed here"));
    }

    private SharedSaves.Reserved reserve(String job, int rank, JsonNode b) throws IOException {
        JsonNode tensors = b.path("tensors");
        if (!tensors.isArray()) {
            throw new IllegalArgumentException("\"tensors\" must be a list of {path, dtype, shape}");
        }
        if (tensors.size() > SharedSaves.MAX_TENSORS) {
            throw new IllegalArgumentException(tensors.size() + " tensors in one save; at most " + SharedSaves.MAX_TENSORS);
        }
        JsonNode files = b.path("files");
        if (!files.isMissingNode() && (!files.isArray() || files.size() > SharedSaves.MAX_TENSORS)) {
            throw new IllegalArgumentException("\"files\" must be a list of {path, size}");
        }
        List<SharedSaves.Wanted> wanted = new ArrayList<>(tensors.size() + files.size());
        for (JsonNode t : tensors) {
            wanted.add(SharedSaves.Wanted.tensor(text(t, "path"), meta(t)));
        }
        for (JsonNode f : files) {
            JsonNode size = f.path("size");
            if (!size.isIntegralNumber() || !size.canConvertToLong() || size.asLong() < 0) {
                throw new IllegalArgumentException("every file needs \"size\" (bytes, an integer >= 0)");
            }
            wanted.add(SharedSaves.Wanted.file(text(f, "path"), size.asLong()));
        }
        return shared.reserve(job, rank, b.path("pid").asLong(0), b.path("start").asLong(0), lease(b), wanted);
    }

    private static TensorMeta meta(JsonNode t) {
        JsonNode shape = t.path("shape");
        if (!shape.isArray() || shape.size() > 32) {
            throw new IllegalArgumentException("a tensor's \"shape\" must be a list of at most 32 sizes");
        }
        long[] dims = new long[shape.size()];
        for (int i = 0; i < dims.length; i++) {
            if (!shape.get(i).canConvertToLong() || !shape.get(i).isIntegralNumber() || shape.get(i).asLong() < 0) {
                throw new IllegalArgumentException("bad size " + shape.get(i) + " in the shape of " + t.path("path"));
            }
            dims[i] = shape.get(i).asLong();
        }
        return new TensorMeta(DType.fromName(text(t, "dtype")), Shape.of(dims));
    }

    private static String text(JsonNode t, String field) {
        if (!t.path(field).isTextual()) {
            throw new IllegalArgumentException("every tensor needs \"" + field + "\" (a string)");
        }
        return t.get(field).asText();
    }

    private static long lease(JsonNode b) {
        JsonNode l = b.path("lease");
        if (l.isMissingNode() || l.isNull()) {
            return DEFAULT_LEASE_SECONDS;
        }
        return l.isIntegralNumber() && l.canConvertToLong() ? l.asLong() : -1;
    }

    /** A commit whose body is refused ends its reservation too (nothing is published). */
    private CompletableFuture<Response> commit(String job, int rank, String id, JsonNode b) throws IOException {
        try {
            return commitParsed(job, rank, id, b);
        } catch (IllegalArgumentException e) {
            try {
                shared.release(job, id);
            } catch (StoreException gone) {
                // unknown or already ended
            }
            throw e;
        }
    }

    private CompletableFuture<Response> commitParsed(String job, int rank, String id, JsonNode b) throws IOException {
        Map<String, byte[]> files = new LinkedHashMap<>();
        JsonNode f = b.path("files");
        if (!f.isMissingNode() && !f.isObject()) {
            throw new IllegalArgumentException("\"files\" must map paths to base64 contents");
        }
        for (var it = f.fields(); it.hasNext();) {
            var e = it.next();
            if (!e.getValue().isTextual()) {
                throw new IllegalArgumentException("file " + e.getKey() + ": its content must be a base64 string");
            }
            try {
                files.put(e.getKey(), Base64.getDecoder().decode(e.getValue().asText()));
            } catch (IllegalArgumentException x) {
                throw new IllegalArgumentException("file " + e.getKey() + " is not base64: " + x.getMessage());
            }
        }
        List<String> order = null;
        JsonNode o = b.path("order");
        if (!o.isMissingNode() && !o.isNull()) {
            if (!o.isArray() || o.size() > SharedSaves.MAX_TENSORS + files.size()) {
                throw new IllegalArgumentException("\"order\" must list the paths of the tensors and files");
            }
            order = new ArrayList<>(o.size());
            for (JsonNode n : o) {
                order.add(n.asText());
            }
        }
        long step = JobRequests.step(b.path("step").asText(""));
        return shared.commit(job, rank, id, step, JobRequests.world(b), b.get("config"), ConfigJson.daemons(b.get("daemons")),
                files, order).thenApply(s -> replies.sealReply(s, rank));
    }

    private CompletableFuture<SharedSaves.Pinned> pin(String job, int rank, JsonNode b) {
        return shared.pinAsync(job, rank, b.path("pid").asLong(0), b.path("start").asLong(0), lease(b));
    }
}
