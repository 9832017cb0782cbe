package io.tenplex.server.jobs;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.DaemonCallException;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.StorePath;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The one HTTP {@link DaemonClient}: the daemons' REST routes, with the scheme, trusted certificates
 * and bearer token of a {@link DaemonLink}. Plan parts and their status travel as protobuf
 * ({@link PlanCodec}), the rest as JSON. Error kinds come from the {@code X-Tenplex-Error-Code}
 * header of an answer.
 */
public final class HttpDaemonClient implements DaemonClient {
    public static final String PROTOBUF = "application/x-protobuf";

    /** The body of {@code POST .../saves/<step>/sealed}: ranks sealed elsewhere ({@code config} left out when none). */
    record SealedRequest(List<Integer> ranks, int world, @JsonInclude(JsonInclude.Include.NON_NULL) JsonNode config) {
    }

    /** The body of {@code POST .../stop}: {@code atStep} left out to stop at once. */
    record RaiseStopRequest(@JsonInclude(JsonInclude.Include.NON_NULL) Long atStep, String reason) {
    }
    static final String ERROR_CODE = "X-Tenplex-Error-Code";
    /** Status questions (a part's, the coordinator's) are answered at once or not at all. */
    private static final Duration STATUS_TIMEOUT = Duration.ofSeconds(5);
    /** Seals and stop flags told to every daemon. */
    private static final Duration TELL_TIMEOUT = Duration.ofSeconds(30);

    private final DaemonLink link;
    private final Duration timeout;
    private final ObjectMapper json = new ObjectMapper();
    private final SourceCheckCalls checks;

    /** @param timeout how long a part's call (post, prepare, commit, abort), a listing or a read may take */
    public HttpDaemonClient(DaemonLink link, Duration timeout) {
        this.link = link;
        this.timeout = timeout;
        this.checks = new SourceCheckCalls(link, timeout);
    }

    @Override
    public CompletableFuture<Void> health(InetSocketAddress daemon) {
        return send(link.request(daemon, "/api/v1/health").timeout(timeout).GET()).thenAccept(r -> {
            if (r.statusCode() != 200) {
                throw new CompletionException(new IOException("health answered " + r.statusCode()));
            }
        });
    }

    @Override
    public CompletableFuture<PartStatus> postPart(InetSocketAddress daemon, PlanPart part) {
        return partCall(daemon, part.job(), "/parts", PlanCodec.encode(part).toByteArray());
    }

    @Override
    public CompletableFuture<ChangeAnswer> postChange(InetSocketAddress daemon, int worker, ChangeSpec spec) {
        return postChange(daemon, "/changes?worker=" + worker, spec);
    }

    @Override
    public CompletableFuture<ChangeAnswer> postChangeAhead(InetSocketAddress daemon, int worker, ChangeSpec spec) {
        return postChange(daemon, "/changes/ahead?worker=" + worker, spec);
    }

    private CompletableFuture<ChangeAnswer> postChange(InetSocketAddress daemon, String route, ChangeSpec spec) {
        HttpRequest.Builder r = link.request(daemon, new JobLayout(spec.job()).api(route))
                .timeout(timeout).header("Content-Type", PROTOBUF)
                .POST(HttpRequest.BodyPublishers.ofByteArray(encoded(spec)));
        return send(r).thenApply(a -> {
            boolean proto = a.headers().firstValue("Content-Type").orElse("").startsWith(PROTOBUF);
            if (a.statusCode() != 409 || !proto) {
                ok(a); // a 409 that is not a ChangeAnswer (a conflict) fails with the daemon's reason
            }
            try {
                var m = io.tenplex.server.control.ChangeAnswer.parseFrom(a.body());
                return new ChangeAnswer(m.hasStatus() ? PlanCodec.decode(m.getStatus()) : null, m.getPlanDigest(),
                        m.getMissingList());
            } catch (IOException e) {
                throw new CompletionException(new IOException("bad answer to a change: " + e.getMessage(), e));
            }
        });
    }

    @Override
    public CompletableFuture<java.util.Map<Integer, String>> describeTrees(InetSocketAddress daemon, String job,
            String sourceDir, List<Integer> ranks) {
        return checks.describeTrees(daemon, job, sourceDir, ranks);
    }

    @Override
    public CompletableFuture<java.util.Map<Integer, java.util.Map<String, String>>> digestValues(InetSocketAddress daemon,
            String job, String sourceDir, java.util.Map<Integer, List<String>> values) {
        return checks.digestValues(daemon, job, sourceDir, values);
    }

    @Override
    public CompletableFuture<byte[]> description(InetSocketAddress daemon, String job, String digest) {
        return send(link.request(daemon, new JobLayout(job).api("/descriptions/" + digest)).timeout(timeout).GET())
                .thenApply(a -> {
                    ok(a);
                    return a.body();
                });
    }

    /** The last change's definition encoded: every daemon of a change is sent the same bytes. */
    private volatile Object[] lastChange = {null, null};

    private byte[] encoded(ChangeSpec spec) {
        Object[] last = lastChange;
        if (last[0] == spec) {
            return (byte[]) last[1];
        }
        byte[] b = ChangeSpecCodec.encode(spec).toByteArray();
        lastChange = new Object[] {spec, b};
        return b;
    }

    @Override
    public CompletableFuture<Void> putDescription(InetSocketAddress daemon, String job, String digest, byte[] bytes) {
        HttpRequest.Builder r = link.request(daemon, new JobLayout(job).api("/descriptions/" + digest)).timeout(timeout)
                .header("Content-Type", "application/octet-stream").PUT(HttpRequest.BodyPublishers.ofByteArray(bytes));
        return send(r).thenAccept(HttpDaemonClient::ok);
    }

    @Override
    public CompletableFuture<PartStatus> partAction(InetSocketAddress daemon, String job, String planId,
            PartAction action) {
        return partCall(daemon, job, "/parts/" + planId + "/" + action.name().toLowerCase(Locale.ROOT), new byte[0]);
    }

    private CompletableFuture<PartStatus> partCall(InetSocketAddress daemon, String job, String route, byte[] body) {
        HttpRequest.Builder r = link.request(daemon, new JobLayout(job).api(route)).timeout(timeout)
                .header("Content-Type", PROTOBUF).POST(HttpRequest.BodyPublishers.ofByteArray(body));
        return send(r).thenApply(HttpDaemonClient::partStatus);
    }

    @Override
    public CompletableFuture<PartStatus> partStatus(InetSocketAddress daemon, String job, String planId) {
        return send(link.request(daemon, new JobLayout(job).apiPart(planId, "")).timeout(STATUS_TIMEOUT).GET())
                .thenApply(HttpDaemonClient::partStatus);
    }

    private static PartStatus partStatus(HttpResponse<byte[]> r) {
        ok(r);
        try {
            return PlanCodec.decode(io.tenplex.server.control.PartStatus.parseFrom(r.body()));
        } catch (IOException e) {
            throw new CompletionException(new IOException("bad part status: " + e.getMessage(), e));
        }
    }

    @Override
    public CompletableFuture<String> reconfigurationState(InetSocketAddress coordinator, String job, String id) {
        return send(link.request(coordinator, new JobLayout(job).apiReconfiguration(id))
                .timeout(STATUS_TIMEOUT).GET()).thenApply(r -> {
                    ok(r);
                    return readTree(r.body()).path("state").asText("unreachable");
                });
    }

    @Override
    public CompletableFuture<List<TreeEntry>> listTree(InetSocketAddress daemon, StorePath dir) {
        return send(link.request(daemon, "/api/v1/dirs" + dir + "?recursive=true").timeout(timeout).GET()).thenApply(r -> {
            if (r.statusCode() == 404) {
                return List.of();
            }
            ok(r);
            List<TreeEntry> out = new ArrayList<>();
            for (JsonNode n : readTree(r.body()).path("entries")) {
                boolean tensor = n.path("type").asText().equals("tensor");
                out.add(new TreeEntry(n.path("path").asText(), tensor, n.path("shape").size(),
                        tensor ? meta(n) : null));
            }
            return out;
        });
    }

    /** A listed tensor's dtype and shape, or null when the entry does not carry them whole. */
    private static TensorMeta meta(JsonNode n) {
        JsonNode shape = n.path("shape");
        if (!n.path("dtype").isTextual() || !shape.isArray()) {
            return null;
        }
        long[] dims = new long[shape.size()];
        for (int i = 0; i < dims.length; i++) {
            dims[i] = shape.get(i).asLong(-1);
        }
        try {
            return TensorMeta.of(DType.fromName(n.get("dtype").asText()), dims);
        } catch (IllegalArgumentException e) {
            return null; // an entry this client cannot read is listed without its shape
        }
    }

    @Override
    public CompletableFuture<SavedValue> readValue(InetSocketAddress daemon, StorePath path) {
        return send(get(daemon, "/api/v1/files" + path)).thenCompose(r -> {
            if (isTensor(r)) {
                return send(get(daemon, "/api/v1/tensors" + path)).thenApply(t -> value(t, true));
            }
            return CompletableFuture.completedFuture(value(r, false));
        });
    }

    private HttpRequest.Builder get(InetSocketAddress daemon, String path) {
        return link.request(daemon, path).timeout(timeout).header("x-want-crc32c", "1").GET();
    }

    /**
     * Whether a file read answered that the path is a tensor: status 404 with the error code
     * {@code wrong_type}.
     */
    private static boolean isTensor(HttpResponse<byte[]> r) {
        if (r.statusCode() != 404) {
            return false;
        }
        return r.headers().firstValue(ERROR_CODE).map("wrong_type"::equals).orElse(false);
    }

    private static SavedValue value(HttpResponse<byte[]> r, boolean tensor) {
        ok(r);
        String crc = r.headers().firstValue("x-tensor-crc32c").orElse(null);
        if (!tensor) {
            return new SavedValue(r.body(), null, crc);
        }
        TensorMeta meta = new TensorMeta(DType.fromName(r.headers().firstValue("x-tensor-dtype").orElse("")),
                Shape.parse(r.headers().firstValue("x-tensor-dims").orElse("")));
        return new SavedValue(r.body(), meta, crc);
    }

    @Override
    public CompletableFuture<Void> sealed(InetSocketAddress daemon, String job, long step, List<Integer> ranks, int world,
            JsonNode config) {
        return tell(daemon, new JobLayout(job).api("/saves/" + step + "/sealed"), "POST",
                new SealedRequest(List.copyOf(ranks), world, config));
    }

    @Override
    public CompletableFuture<Void> raiseStop(InetSocketAddress daemon, String job, OptionalLong atStep, String reason) {
        return tell(daemon, new JobLayout(job).api("/stop"), "POST",
                new RaiseStopRequest(atStep.isPresent() ? atStep.getAsLong() : null, reason));
    }

    @Override
    public CompletableFuture<Void> clearStop(InetSocketAddress daemon, String job) {
        return tell(daemon, new JobLayout(job).api("/stop"), "DELETE", null);
    }

    @Override
    public CompletableFuture<Void> removeJob(InetSocketAddress daemon, String job, RemovalStep step) {
        String query = switch (step) {
            case PREPARE -> "?local=true&prepare=true";
            case RELEASE -> "?local=true&release=true";
            case REMOVE -> "?local=true";
        };
        return tell(daemon, new JobLayout(job).api(query), "DELETE", null);
    }

    @Override
    public CompletableFuture<JsonNode> parallelize(String daemon, String job, JsonNode request) {
        return postJson(daemon, new JobLayout(job).api("/parallelize"), request);
    }

    @Override
    public CompletableFuture<JsonNode> startResourceChange(String daemon, String job, JsonNode request) {
        return postJson(daemon, new JobLayout(job).api("/resources"), request);
    }

    @Override
    public CompletableFuture<JsonNode> awaitResourceChange(String daemon, String job, String id, Duration wait) {
        HttpRequest.Builder r = link.authorize(HttpRequest.newBuilder(link.uri(daemon, new JobLayout(job)
                .apiResourceChange(id) + "?wait=true"))).timeout(wait).GET();
        return send(r).thenApply(a -> {
            ok(a);
            return readTree(a.body());
        });
    }

    @Override
    public CompletableFuture<java.util.Optional<byte[]>> readFile(String daemon, StorePath path) {
        HttpRequest.Builder r = link.authorize(HttpRequest.newBuilder(link.uri(daemon, "/api/v1/files" + path)))
                .timeout(TELL_TIMEOUT).GET();
        return send(r).thenApply(a -> {
            if (a.statusCode() == 404) {
                return java.util.Optional.empty();
            }
            ok(a);
            return java.util.Optional.of(a.body());
        });
    }

    @Override
    public CompletableFuture<Void> writeFile(String daemon, StorePath path, byte[] bytes) {
        HttpRequest.Builder r = link.authorize(HttpRequest.newBuilder(link.uri(daemon, "/api/v1/files" + path
                + "?replace=true"))).timeout(TELL_TIMEOUT).PUT(HttpRequest.BodyPublishers.ofByteArray(bytes));
        return send(r).thenAccept(HttpDaemonClient::ok);
    }

    private CompletableFuture<JsonNode> postJson(String daemon, String route, JsonNode body) {
        HttpRequest.Builder r = link.authorize(HttpRequest.newBuilder(link.uri(daemon, route))).timeout(TELL_TIMEOUT)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        return send(r).thenApply(a -> {
            ok(a);
            return readTree(a.body());
        });
    }

    /** Sends {@code body} (a request record, or null for none) as JSON. */
    private CompletableFuture<Void> tell(InetSocketAddress daemon, String route, String method, Object body) {
        HttpRequest.Builder r;
        try {
            r = link.request(daemon, route).timeout(TELL_TIMEOUT).method(method, body == null
                    ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(json.writeValueAsBytes(body)));
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (body != null) {
            r.header("Content-Type", "application/json");
        }
        return send(r).thenAccept(HttpDaemonClient::ok);
    }

    private CompletableFuture<HttpResponse<byte[]>> send(HttpRequest.Builder r) {
        return link.http().sendAsync(r.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** Throws the answer's refusal unless it is 2xx. */
    static void ok(HttpResponse<byte[]> r) {
        if (r.statusCode() / 100 == 2) {
            return;
        }
        throw new CompletionException(refusal(r));
    }

    static DaemonCallException refusal(HttpResponse<byte[]> r) {
        String reason = new String(r.body(), StandardCharsets.UTF_8);
        return new DaemonCallException(kind(r), r.statusCode(), reason);
    }

    private static DaemonCallException.Kind kind(HttpResponse<byte[]> r) {
        String code = r.headers().firstValue(ERROR_CODE).orElse("");
        if (code.equals("not_found") || code.isEmpty() && r.statusCode() == 404) {
            return DaemonCallException.Kind.NOT_FOUND;
        }
        if (code.equals("conflict") || code.isEmpty() && r.statusCode() == 409) {
            return DaemonCallException.Kind.CONFLICT;
        }
        return DaemonCallException.Kind.OTHER;
    }

    private JsonNode readTree(byte[] body) {
        try {
            return json.readTree(body);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
