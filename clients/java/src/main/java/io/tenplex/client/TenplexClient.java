package io.tenplex.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * A JVM client of tenplexd (for JVM trainers and tools): tensors and files, sub-tensor reads, and
 * save/load of a state in the prototype's checkpoint layout (interchangeable with the Python client):
 * nested maps are directories, tensors {@code <key>.numpy.ndarray}, strings {@code .str}, integers
 * {@code .int}, doubles {@code .float}, booleans {@code .bool}, null {@code .none}.
 *
 * <p>Every body the daemon sends with {@code x-tensor-crc32c} is verified (a mismatch is a
 * {@link TenplexException}). A client made with {@link #withChecksums(boolean) withChecksums(true)}
 * also asks for the checksum on every read (and fails when it does not come) and sends the body's
 * CRC32C with every upload, which the daemon verifies before it stores anything.
 */
public final class TenplexClient {
    public static final String TENSOR = ".numpy.ndarray";
    private static final List<String> VALUE_SUFFIXES = List.of(".argparse.Namespace", ".none", ".str", ".int", ".float",
            ".bool", ".bytes");

    private final String addr;
    private final Link link;
    private final ObjectMapper json = new ObjectMapper();
    private final boolean checksums;

    /** @param addr e.g. {@code http://127.0.0.1:20010}; @param token bearer token or null */
    public TenplexClient(String addr, String token) {
        this(addr, token, null);
    }

    /**
     * @param addr e.g. {@code https://10.0.0.7:20010}
     * @param token bearer token or null
     * @param caFile PEM CA certificates to trust for https, or null for the JDK's trusted CAs
     */
    public TenplexClient(String addr, String token, java.nio.file.Path caFile) {
        this(addr, caFile == null ? Link.plain(token) : Link.tls(caFile, token), false);
    }

    /**
     * A client over an HTTP client of the caller's (its TLS trust, timeouts, pooling).
     *
     * @param addr e.g. {@code https://10.0.0.7:20010}, or {@code host:port} reached over https when
     *     {@code tls}, else http
     * @param token bearer token or null
     */
    public static TenplexClient over(String addr, HttpClient http, String token, boolean tls) {
        return new TenplexClient(addr, new Link(tls ? "https" : "http", token, http), false);
    }

    private TenplexClient(String addr, Link link, boolean checksums) {
        this.addr = addr.endsWith("/") ? addr.substring(0, addr.length() - 1) : addr;
        this.link = link;
        this.checksums = checksums;
    }

    /**
     * The same daemon with checksums asked for on every read and sent with every upload ({@code true}),
     * or only verified when the daemon sends them ({@code false}, the default).
     */
    public TenplexClient withChecksums(boolean always) {
        return new TenplexClient(addr, link, always);
    }

    /**
     * From the environment: {@code TENPLEX_ADDR} (default {@code http://127.0.0.1:20010}), the token
     * from {@code TENPLEX_TOKEN_FILE} or {@code TENPLEX_TOKEN}, the CA file from {@code TENPLEX_CA}.
     */
    public static TenplexClient fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    static TenplexClient fromEnvironment(Map<String, String> env) {
        String a = env.get("TENPLEX_ADDR");
        String ca = env.get("TENPLEX_CA");
        return new TenplexClient(a == null || a.isEmpty() ? "http://127.0.0.1:20010" : a, ClientToken.fromEnv(env),
                ca == null || ca.isEmpty() ? null : java.nio.file.Path.of(ca));
    }

    static String encode(String path) {
        StringJoiner j = new StringJoiner("/", "/", "");
        for (String p : path.split("/")) {
            if (!p.isEmpty()) {
                j.add(URLEncoder.encode(p, StandardCharsets.UTF_8).replace("+", "%20"));
            }
        }
        return j.toString();
    }

    /** A read: asks for the checksum when on, and verifies the one the daemon sends. */
    private HttpResponse<byte[]> read(HttpRequest.Builder b, String path) {
        if (checksums) {
            b.header(Checksums.WANT_HEADER, "1");
        }
        HttpResponse<byte[]> r = send(b.GET(), 200);
        Checksums.verify(path, r.headers().firstValue(Checksums.HEADER).orElse(null), r.body(), checksums);
        return r;
    }

    /** An upload of {@code body}, with its checksum when on. */
    private HttpRequest.Builder upload(HttpRequest.Builder b, byte[] body) {
        if (checksums) {
            b.header(Checksums.HEADER, Checksums.hex(body));
        }
        return b.PUT(HttpRequest.BodyPublishers.ofByteArray(body));
    }

    private HttpResponse<byte[]> send(HttpRequest.Builder b, int... ok) {
        HttpRequest r = link.authorize(b).build();
        HttpResponse<byte[]> resp;
        try {
            resp = link.http().send(r, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new TenplexException(0, "cannot reach the tenplex daemon at " + addr + ": " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TenplexException(0, "interrupted");
        }
        for (int s : ok) {
            if (resp.statusCode() == s) {
                return resp;
            }
        }
        throw new TenplexException(resp.statusCode(), resp.headers().firstValue("X-Tenplex-Error-Code").orElse(null),
                r.method() + " " + r.uri().getRawPath() + ": " + resp.statusCode() + " " + reason(resp));
    }

    /** The daemon's one-line reason: the {@code error} of a JSON error body, else the text body. */
    private String reason(HttpResponse<byte[]> resp) {
        String text = new String(resp.body(), StandardCharsets.UTF_8).strip();
        if (resp.headers().firstValue("Content-Type").orElse("").startsWith("application/json")) {
            try {
                JsonNode error = json.readTree(text).get("error");
                if (error != null && error.isTextual()) {
                    return error.asText();
                }
            } catch (IOException e) {
                return text;
            }
        }
        return text;
    }

    private HttpRequest.Builder at(String route, String path, String query) {
        return request(route + encode(path) + (query == null ? "" : "?" + query));
    }

    private HttpRequest.Builder request(String pathAndQuery) {
        return HttpRequest.newBuilder(link.uri(addr, pathAndQuery));
    }

    public void putTensor(String path, Tensor t, boolean replace) {
        StringJoiner dims = new StringJoiner(",");
        for (long d : t.shape()) {
            dims.add(Long.toString(d));
        }
        send(upload(at("/api/v1/tensors", path, "dtype=" + t.dtype() + "&dims=" + dims + "&replace=" + replace),
                t.data()), 200, 201);
    }

    /** The tensor at {@code path}, or the sub-tensor {@code range} (e.g. {@code "1:3,:"}; null for all). */
    public Tensor getTensor(String path, String range) {
        HttpResponse<byte[]> r = read(at("/api/v1/tensors", path, range == null ? null
                : "range=" + URLEncoder.encode(range, StandardCharsets.UTF_8)), path);
        String dims = r.headers().firstValue("x-tensor-dims").orElse("");
        long[] shape = dims.isEmpty() ? new long[0] : java.util.Arrays.stream(dims.split(",")).mapToLong(Long::parseLong)
                .toArray();
        return new Tensor(r.headers().firstValue("x-tensor-dtype").orElseThrow(), shape, r.body());
    }

    public void putFile(String path, byte[] data, boolean replace) {
        send(upload(at("/api/v1/files", path, "replace=" + replace), data), 200, 201);
    }

    public byte[] getFile(String path) {
        return read(at("/api/v1/files", path, null), path).body();
    }

    /** Deletes a path and everything below it; false when there was nothing. */
    public boolean delete(String path) {
        return send(at("/api/v1/dirs", path, "recursive=true").DELETE(), 200, 404).statusCode() == 200;
    }

    /** One stored entry below a prefix: its path, type ({@code file} or {@code tensor}), dtype and shape. */
    public record Entry(String path, String type, String dtype, long[] shape) {}

    /**
     * Every file and tensor below {@code prefix}, in creation order.
     *
     * @throws NoCheckpoint when nothing is stored at {@code prefix}
     */
    public List<Entry> list(String prefix) {
        try {
            HttpResponse<byte[]> r = send(at("/api/v1/dirs", prefix, "recursive=true").GET(), 200, 404);
            if (r.statusCode() == 404) {
                throw noCheckpoint("nothing saved at " + prefix, r);
            }
            JsonNode n = json.readTree(r.body());
            List<Entry> out = new ArrayList<>();
            for (JsonNode e : n.path("entries")) {
                long[] shape = new long[e.path("shape").size()];
                for (int i = 0; i < shape.length; i++) {
                    shape[i] = e.path("shape").get(i).asLong();
                }
                out.add(new Entry(e.path("path").asText(), e.path("type").asText(), e.path("dtype").asText(null), shape));
            }
            return out;
        } catch (IOException e) {
            throw new TenplexException(0, "bad listing from the daemon: " + e.getMessage());
        }
    }

    private NoCheckpoint noCheckpoint(String what, HttpResponse<byte[]> r) {
        return new NoCheckpoint(r.headers().firstValue("X-Tenplex-Error-Code").orElse(null), what + ": " + reason(r));
    }

    /** Writes a state (nested maps of tensors and plain values) below {@code prefix}, replacing entries. */
    public void save(String prefix, Map<String, ?> state) {
        for (Map.Entry<String, ?> e : state.entrySet()) {
            String key = e.getKey();
            if (key.isEmpty() || key.equals(".") || key.equals("..") || key.contains("/")) {
                throw new IllegalArgumentException("key '" + key + "' cannot be a name in the store");
            }
            String p = prefix + "/" + key;
            Object v = e.getValue();
            if (v instanceof Map<?, ?> m) {
                @SuppressWarnings("unchecked")
                Map<String, ?> sub = (Map<String, ?>) m;
                if (sub.isEmpty()) {
                    putFile(p + "/dir.meta", "dict\n0".getBytes(StandardCharsets.UTF_8), true);
                }
                save(p, sub);
            } else if (v instanceof Tensor t) {
                putTensor(p + TENSOR, t, true);
            } else if (v == null) {
                putFile(p + ".none", "None".getBytes(StandardCharsets.UTF_8), true);
            } else if (v instanceof Boolean b) {
                putFile(p + ".bool", (b ? "True" : "False").getBytes(StandardCharsets.UTF_8), true);
            } else if (v instanceof Integer || v instanceof Long) {
                putFile(p + ".int", v.toString().getBytes(StandardCharsets.UTF_8), true);
            } else if (v instanceof Double || v instanceof Float) {
                putFile(p + ".float", Double.toString(((Number) v).doubleValue()).getBytes(StandardCharsets.UTF_8), true);
            } else if (v instanceof String s) {
                putFile(p + ".str", s.getBytes(StandardCharsets.UTF_8), true);
            } else {
                throw new IllegalArgumentException("cannot save a " + v.getClass().getSimpleName() + " at " + p);
            }
        }
    }

    /**
     * Reads the tree below {@code prefix}: nested maps (lists as maps keyed "0", "1", ... with their
     * {@code dir.meta}), tensors as {@link Tensor}, values parsed by their suffix.
     */
    public Map<String, Object> load(String prefix) {
        Map<String, Object> root = new LinkedHashMap<>();
        String base = prefix.endsWith("/") ? prefix : prefix + "/";
        for (Entry e : list(prefix)) {
            String rel = e.path().substring(base.length());
            String[] parts = rel.split("/");
            Map<String, Object> node = root;
            for (int i = 0; i < parts.length - 1; i++) {
                @SuppressWarnings("unchecked")
                Map<String, Object> next = (Map<String, Object>) node.computeIfAbsent(parts[i], k -> new LinkedHashMap<>());
                node = next;
            }
            String leaf = parts[parts.length - 1];
            if (e.type().equals("tensor")) {
                node.put(leaf.endsWith(TENSOR) ? leaf.substring(0, leaf.length() - TENSOR.length()) : leaf,
                        getTensor(e.path(), null));
                continue;
            }
            byte[] data = getFile(e.path());
            String suffix = VALUE_SUFFIXES.stream().filter(leaf::endsWith).findFirst().orElse(null);
            if (suffix == null) {
                node.put(leaf, data);
                continue;
            }
            String key = leaf.substring(0, leaf.length() - suffix.length());
            String text = new String(data, StandardCharsets.UTF_8);
            node.put(key, switch (suffix) {
                case ".none" -> null;
                case ".str" -> text;
                case ".int" -> Long.parseLong(text.strip());
                case ".float" -> Double.parseDouble(text.strip());
                case ".bool" -> text.strip().equals("True");
                default -> data;
            });
        }
        return root;
    }

    /** Every tensor below {@code prefix} by its path relative to the prefix (sorted), for comparisons and casts. */
    public Map<String, Tensor> tensors(String prefix) {
        String base = prefix.endsWith("/") ? prefix : prefix + "/";
        Map<String, Tensor> out = new java.util.TreeMap<>();
        for (Entry e : list(prefix)) {
            if (e.type().equals("tensor")) {
                out.put(e.path().substring(base.length()), getTensor(e.path(), null));
            }
        }
        return out;
    }

    /** Saves one rank's state as step {@code step} of {@code job} and seals it (see the Python {@code tenplex.save}). */
    public JsonNode saveRank(String job, long step, int rank, int world, Map<String, ?> state, String configJson) {
        JobRoutes layout = new JobRoutes(job);
        delete(layout.savedRank(rank));
        if (state != null) {
            save(layout.savedRank(rank), state);
        }
        String body = "{\"world\": " + world + (configJson == null ? "" : ", \"config\": " + configJson) + "}";
        try {
            return json.readTree(send(request(layout.saveRank(step, rank))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)), 200).body());
        } catch (IOException e) {
            throw new TenplexException(0, "bad seal answer: " + e.getMessage());
        }
    }

    /**
     * What {@code rank} of {@code job} loads: the daemon chooses the latest complete generation, or a
     * reconfiguration's output when newer (see the Python {@code tenplex.load}).
     *
     * @throws NoCheckpoint when there is none (a first start)
     */
    public Map<String, Object> loadRank(String job, int rank) {
        try {
            HttpResponse<byte[]> r = send(request(new JobRoutes(job).load(rank)).GET(), 200, 404);
            if (r.statusCode() == 404) {
                String reason = reason(r);
                throw new NoCheckpoint(r.headers().firstValue("X-Tenplex-Error-Code").orElse(null),
                        NoCheckpoint.message(rank, job, reason));
            }
            JsonNode choice = json.readTree(r.body());
            return load(choice.path("path").asText());
        } catch (IOException e) {
            throw new TenplexException(0, "bad load answer: " + e.getMessage());
        }
    }

    /** Whether a rank that has finished {@code step} steps must stop (save, then exit). */
    public boolean shouldStop(String job, long step) {
        try {
            return json.readTree(send(request(new JobRoutes(job).stop() + "?step=" + step).GET(), 200).body()).path("stop").asBoolean();
        } catch (IOException e) {
            throw new TenplexException(0, "bad stop answer: " + e.getMessage());
        }
    }
}
