package io.tenplex.daemon;

import io.tenplex.server.control.Device;
import io.tenplex.server.control.Piece;
import io.tenplex.server.control.Range;
import io.tenplex.server.control.Region;
import io.tenplex.server.control.Shard;
import io.tenplex.server.control.WorkerPlan;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;

/**
 * Makes hostile requests for every route of the daemon, from one seed: malformed ranges, dtypes,
 * dims and lengths, chunked encodings, paths, heads, methods, JSON and protobuf bodies, pipelined
 * requests; the shared-memory, tiers, streams and rehearsal routes with their JSON and binary
 * (rehearsal batch, slot list, sample) bodies at the edges of int32 and int64. Every path it writes lies below {@link #SCRATCH} or job {@link #JOB}, and destructive
 * methods never carry {@code ..}, so whatever a request is allowed to do stays there: anything else
 * in the store must come through byte-identical. Requests with a job name that is not one
 * ({@link #BAD_JOB_NAMES}: empty, dots, encoded slashes, NUL, over 255 bytes) go to every route that
 * takes a job, removal included, and must each be refused with a 4xx ({@link Request#badName}).
 */
final class HttpFuzzer {
    static final String SCRATCH = "/fuzz";
    static final String JOB = "fz";
    /** Job names that are not a job's, as a request's path carries them (percent-encoded where a URL needs it). */
    static final List<String> BAD_JOB_NAMES = List.of("", ".", "..", "%2E", "%2e%2E", "%2F", "%2f", "a%2Fb", JOB + "%2F",
            "%2F" + JOB, "%2E%2E%2F" + JOB, "%00", JOB + "%00", "x".repeat(300), "%C3%A9".repeat(128));

    /**
     * One request as bytes, with whether its answer has no body (HEAD), how many answers to read, and
     * whether it names a job that is not one (its answer must be a 4xx).
     */
    record Request(String summary, byte[] bytes, boolean head, int answers, boolean badName) {}

    private static final List<String> METHODS = List.of("GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS", "PATCH",
            "get", "TRACE", "CONNECT", "BREW", "");
    private static final List<String> JOB_ROUTES = List.of("reconfigure", "reconfigure?dryRun=true", "resources",
            "parallelize", "stop", "stop?step=", "saves/1/ranks/0", "saves/2/sealed", "generations", "parts",
            "parts/p1", "parts/p1/prepare", "parts/p1/commit", "parts/p1/abort", "reconfigurations/x",
            "resources/x?wait=true", "model");
    /** The newer routes of a job: shared memory, tiers, streams and rehearsal buffers (docs/API.md). */
    private static final List<String> NEWER_ROUTES = List.of("shared", "shared/saves/0", "shared/saves/N",
            "shared/saves/0/x/commit", "shared/saves/0/N/commit", "shared/loads/0", "shared/loads/N", "shared/x",
            "shared/saves", "shared/saves/0/x", "tiers", "tiers/x", "streams", "streams?local=true",
            "streams/samples?key=N&rank=N&wait=N", "streams/samples?rank=0", "streams/ranks/N/batch?size=N&wait=N",
            "streams/ranks/0/batch", "streams/close", "streams/end", "streams/end?local=true", "streams/partition",
            "streams/config", "streams/config?create=true", "streams/export", "streams/export?next=true",
            "streams/import", "streams/unfreeze", "streams/x", "rehearsal", "rehearsal/N/update",
            "rehearsal/0/update?draw=N&scope=global&waited=N", "rehearsal/N/sample?r=N&scope=global",
            "rehearsal/0/sample?r=N&scope=local", "rehearsal/0/sample", "rehearsal/repartition", "rehearsal/counts",
            "rehearsal/fetch", "rehearsal/hold", "rehearsal/prepare", "rehearsal/commit", "rehearsal/abort",
            "rehearsal/x");
    private static final List<String> DTYPES = List.of("f32", "float32", "f64", "i8", "u8", "bf16", "f16", "bool",
            "c64", "F32", "", "f32f32", "object", "<f4");
    private static final List<String> NUMBERS = List.of("0", "1", "-1", "3", "1000", "2147483647", "2147483648",
            "9223372036854775807", "-9223372036854775808", "99999999999999999999", "1e9", "5e6", "0x10", "", "NaN",
            "1.5", " 2", "3 ");
    private static final List<String> TYPES = List.of("x-tensor", "X-Tensor", "application/json",
            "application/x-protobuf", "application/x-npy", "application/x-tar", "text/plain", "x-dir",
            "application/octet-stream", "multipart/form-data; boundary=x", "APPLICATION/JSON; charset=utf-8");

    private final Random rnd;

    HttpFuzzer(long seed) {
        this.rnd = new Random(seed);
    }

    private <T> T pick(List<T> xs) {
        return xs.get(rnd.nextInt(xs.size()));
    }

    private String number() {
        return rnd.nextInt(4) == 0 ? Long.toString(rnd.nextLong() % 100_000) : pick(NUMBERS);
    }

    Request next() {
        if (rnd.nextInt(8) == 0) {
            return badName();
        }
        int pipelined = rnd.nextInt(12) == 0 ? 2 + rnd.nextInt(2) : 1;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        StringBuilder summary = new StringBuilder();
        boolean head = false;
        for (int i = 0; i < pipelined; i++) {
            String method = method();
            head |= method.equals("HEAD");
            String target = target(method);
            byte[] body = body(target);
            byte[] bytes = frame(method, target, body);
            out.writeBytes(bytes);
            summary.append(i == 0 ? "" : " | ").append(method).append(' ')
                    .append(target, 0, Math.min(target.length(), 120)).append(" [").append(bytes.length).append(" B]");
        }
        // a HEAD among pipelined requests would make the answers hard to split: read only the first then
        return new Request(summary.toString(), out.toByteArray(), head, head ? 1 : pipelined, false);
    }

    /**
     * A request alone on its connection to a route that takes a job, with a name that is not one; a
     * third of them remove the job ({@code tenplex rm}, or a step of it on another daemon's behalf).
     */
    private Request badName() {
        String name = pick(BAD_JOB_NAMES);
        boolean removal = rnd.nextInt(3) == 0;
        String method = removal ? "DELETE" : pick(List.of("GET", "HEAD", "PUT", "POST", "DELETE"));
        String target = switch (removal ? 0 : 1 + rnd.nextInt(5)) {
            case 0, 1 -> "/api/v1/jobs/" + name + pick(List.of("", "/", "?local=true", "?local=true&dryRun=true",
                    "?local=true&prepare=true", "?local=true&release=true"));
            case 2 -> "/api/v1/jobs/" + name + "/" + pick(JOB_ROUTES);
            case 3 -> "/api/v1/jobs/" + name + "/" + newerRoute();
            case 4 -> "/stop?job=" + name + maybe("&step=" + number());
            default -> "/api/v1/datasets/" + name + pick(List.of("", "/", "/mount", "/samples", "/files/dataset/rank-0/x"));
        };
        byte[] bytes = frame(method, target, body(target));
        return new Request("bad name " + method + " " + target.substring(0, Math.min(target.length(), 120)) + " ["
                + bytes.length + " B]", bytes, method.equals("HEAD"), 1, true);
    }

    private String method() {
        int r = rnd.nextInt(40);
        if (r == 0) {
            return "X".repeat(1 + rnd.nextInt(5000));
        }
        if (r == 1) {
            return "G\u0001T";
        }
        return pick(METHODS);
    }

    private boolean destructive(String method) {
        return !method.equals("GET") && !method.equals("HEAD");
    }

    private String name(String method) {
        String[] parts = {"a", "b.npy", "c.numpy.ndarray", "d.meta", "w", "x y", "%41", "%00", "%ff", "é", "",
                "a".repeat(300), "..", ".", "%2e%2e", "save", "load", "generations", "staging"};
        String p = pick(List.of(parts));
        if (destructive(method) && (p.contains("..") || p.contains("%2e") || p.equals("."))) {
            return "n";
        }
        return p;
    }

    private String path(String method) {
        String root = rnd.nextBoolean() ? SCRATCH : "/job/" + JOB;
        StringBuilder p = new StringBuilder(root);
        int depth = rnd.nextInt(4);
        for (int i = 0; i < depth; i++) {
            p.append('/').append(name(method));
        }
        if (rnd.nextInt(20) == 0) {
            p.append('/');
        }
        return p.toString();
    }

    private String target(String method) {
        String path = path(method);
        String t = switch (rnd.nextInt(17)) {
            case 0 -> "/upload?path=" + path + "&dtype=" + pick(DTYPES) + "&dims=" + dims();
            case 1 -> "/query?path=" + path + maybe("&range=" + range());
            case 2 -> "/delete?path=" + path;
            case 3 -> "/api/v1/tensors" + path + "?dtype=" + pick(DTYPES) + "&dims=" + dims() + maybe("&range=" + range())
                    + maybe("&replace=true");
            case 4 -> "/api/v1/files" + path + "?" + maybe("replace=" + pick(List.of("true", "1", "no", "")))
                    + maybe("&offset=" + number() + "&length=" + number());
            case 5 -> "/api/v1/dirs" + path + maybe("?recursive=true");
            case 6 -> "/api/v1/stat" + path;
            case 7 -> "/api/v1/checksums" + path + maybe("?range=" + range());
            case 8, 9 -> "/api/v1/jobs/" + JOB + "/" + pick(JOB_ROUTES) + (rnd.nextInt(4) > 0 ? "" : number());
            case 10 -> "/api/v1/datasets/" + JOB + pick(List.of("/mount", "", "/files/dataset/rank-0/samples?offset="
                    + number() + "&length=" + number(), "/samples"));
            case 11 -> pick(List.of("/metrics", "/api/v1/health", "/stop?job=" + JOB + "&step=" + number(), "/", "*",
                    "/api/v2/x", "/api/v1/", "http://evil/x", "/%", "/api/v1/tensors%2fjob"));
            case 12 -> "/api/v1/jobs/" + pick(List.of(JOB, "", "..", "%00", "a/b")) + "/" + pick(JOB_ROUTES);
            case 14, 15 -> "/api/v1/jobs/" + JOB + "/" + newerRoute();
            case 16 -> "/api/v1/jobs/" + pick(List.of(JOB, "..", "%2e%2e", "%00", "a%2fb", "fz/..")) + "/"
                    + newerRoute() + pick(List.of("", "/", "//", "/..", "?x=%", "/%2e%2e/tiers"));
            default -> "/api/v1/files" + path;
        };
        return rnd.nextInt(30) == 0 ? t + "#frag" + "&x=".repeat(rnd.nextInt(3)) : t;
    }

    /** One of {@link #NEWER_ROUTES} with each {@code N} replaced by a number at the edges. */
    private String newerRoute() {
        String[] parts = pick(NEWER_ROUTES).split("N", -1);
        StringBuilder b = new StringBuilder(parts[0]);
        for (int i = 1; i < parts.length; i++) {
            b.append(number()).append(parts[i]);
        }
        return b.toString();
    }

    private String maybe(String s) {
        return rnd.nextBoolean() ? s : "";
    }

    private String dims() {
        int n = rnd.nextInt(5);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            b.append(i == 0 ? "" : ",").append(rnd.nextInt(3) == 0 ? number() : Integer.toString(1 + rnd.nextInt(40)));
        }
        return rnd.nextInt(10) == 0 ? b + ",,x" : b.toString();
    }

    private String range() {
        int n = rnd.nextInt(4);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            b.append(i == 0 ? "" : ",").append(pick(List.of(":", number() + ":" + number(), ":" + number(),
                    number() + ":", "a:b", "1:2:3", "-1:", "")));
        }
        return b.toString();
    }

    private byte[] body(String target) {
        int kind = rnd.nextInt(10);
        if (kind < 2) {
            return new byte[0];
        }
        if (target.contains("/parts") || kind == 2) {
            return rnd.nextBoolean() ? plan() : mutate(plan());
        }
        if (target.contains("/update") || target.contains("/rehearsal/fetch")) {
            byte[] b = target.contains("/fetch") ? slots() : rehearsalBatch();
            return rnd.nextInt(3) == 0 ? mutate(b) : b;
        }
        if (target.contains("/streams/samples")) {
            byte[] b = new byte[pick(List.of(0, 1, 100, 1 << 16, (1 << 20) + 1))];
            rnd.nextBytes(b);
            return b;
        }
        if (target.contains("/api/v1/jobs") || target.contains("/datasets") || kind == 3) {
            byte[] j = rnd.nextBoolean() ? jsonFor(target) : json();
            return rnd.nextInt(4) == 0 ? mutate(j) : j;
        }
        if (kind == 4) {
            return npy();
        }
        byte[] b = new byte[pick(List.of(0, 1, 3, 4, 12, 4095, 4097, 1 << 16, (1 << 20) + 1))];
        rnd.nextBytes(b);
        return b;
    }

    /** A body shaped for the route, with values at the edges. */
    private byte[] jsonFor(String target) {
        String v = "{\"tp\":" + number() + ",\"pp\":" + number() + ",\"dp\":" + number() + "}";
        String body;
        if (target.contains("/parallelize") || target.contains("/resources")) {
            body = rnd.nextBoolean() ? "{\"size\":" + number() + ",\"devicesPerWorker\":" + number() + "}"
                    : "{\"devices\":[[0," + number() + "]],\"config\":" + v + ",\"atStep\":" + number() + "}";
        } else if (target.contains("/shared") || target.contains("/tiers") || target.contains("/streams")
                || target.contains("/rehearsal")) {
            return newerJson(target);
        } else if (target.contains("/reconfigure")) {
            body = "{\"from\":" + v + ",\"to\":" + v + ",\"devices\":" + pick(List.of("[[0]]", "[[0,0]]", "[[0,0],[0,1]]",
                    "[[5,0]]", "[[0,-1]]")) + ",\"step\":" + number() + "}";
        } else if (target.contains("/saves")) {
            body = "{\"world\":[" + number() + "],\"config\":" + v + "}";
        } else if (target.contains("/stop")) {
            body = "{\"atStep\":" + number() + "}";
        } else if (target.contains("/mount")) {
            body = "{\"indexText\":\"1\\nf 1\\n0 4\\n\",\"globalBatch\":" + number() + ",\"dpSize\":" + number()
                    + ",\"progress\":" + number() + ",\"ranks\":" + pick(List.of("[0,0]", "[0]", "[-1]", "[2147483647]")) + "}";
        } else {
            return json();
        }
        return body.getBytes(StandardCharsets.UTF_8);
    }

    /** A body for the shared, tiers, streams or rehearsal routes, with numbers at the edges and odd types. */
    private byte[] newerJson(String target) {
        String n = number();
        String body;
        if (target.contains("/commit") && target.contains("/shared")) {
            body = "{\"step\":" + number() + ",\"world\":" + pick(List.of("[0]", "[0,1]", "1", "[]", "[-1]")) + ",\"order\":"
                    + pick(List.of("[\"w\"]", "[]", "null", "[\"..\"]", "[\"w\",\"w\"]")) + ",\"files\":"
                    + pick(List.of("{}", "{\"f\":\"AAEC\"}", "{\"f\":\"!!notbase64\"}", "{\"../x\":\"AA==\"}", "[]")) + "}";
        } else if (target.contains("/shared")) {
            body = "{\"pid\":" + pick(List.of("0", "1", "-1", n)) + ",\"start\":" + number() + ",\"lease\":" + number()
                    + ",\"tensors\":[{\"path\":\"" + pick(List.of("w", "a/b.numpy.ndarray", "", "..", "/abs", "%00", "a//b"))
                    + "\",\"dtype\":\"" + pick(DTYPES) + "\",\"shape\":[" + number() + "," + number() + "]}],\"files\":"
                    + pick(List.of("[]", "[{\"path\":\"f\",\"size\":" + number() + "}]", "[{\"path\":\"f\"}]", "{}", "null"))
                    + "}";
        } else if (target.contains("/tiers")) {
            body = "{\"partners\":" + number() + ",\"groupSize\":" + number() + ",\"parity\":" + number()
                    + ",\"durableKeep\":" + number() + "}";
        } else if (target.contains("/streams")) {
            body = "{\"policy\":\"" + pick(List.of("fifo", "firo", "reservoir", "lifo", "")) + "\",\"capacity\":" + n
                    + ",\"threshold\":" + number() + ",\"max_sample_bytes\":" + number() + ",\"producers\":" + number()
                    + ",\"seed\":" + number() + "," + pick(List.of("\"dp\":" + number(), "\"ranks\":[\"127.0.0.1:1\"]",
                    "\"ranks\":[\"evil.example:80\"]", "\"ranks\":[\"x\"]", "\"ranks\":[]")) + "}";
        } else {
            body = pick(List.of("{\"classes\":" + n + ",\"perClass\":" + number() + ",\"candidates\":" + number()
                    + ",\"batch\":" + number() + ",\"seed\":" + number() + "}",
                    "{\"ranks\":{\"" + number() + "\":\"" + pick(List.of("127.0.0.1:1", "x", "evil.example:80")) + "\"}}",
                    "{\"config\":{\"classes\":2,\"perClass\":2,\"candidates\":1,\"batch\":2},\"daemons\":[{\"id\":\"d\","
                            + "\"address\":\"127.0.0.1:1\"}],\"ranks\":{\"0\":[[" + number() + ",0,0," + number() + "]]}}"));
        }
        return body.getBytes(StandardCharsets.UTF_8);
    }

    /** A rehearsal batch (little-endian), its counts, sizes and dtypes at the edges. */
    private byte[] rehearsalBatch() {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4096).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        int count = rnd.nextInt(4) == 0 ? (int) edge() : rnd.nextInt(3);
        b.putInt(count);
        for (int s = 0; s < Math.min(Math.max(count, 0), 3); s++) {
            b.putInt(rnd.nextInt(4) == 0 ? (int) edge() : rnd.nextInt(3)).putInt(rnd.nextInt(4) == 0 ? (int) edge() : 1);
            byte[] dtype = pick(List.of("<f4", "|u1", "O", "", "<U3", "x".repeat(40))).getBytes(StandardCharsets.US_ASCII);
            b.putInt(rnd.nextInt(6) == 0 ? (int) edge() : dtype.length).put(dtype);
            int ndim = rnd.nextInt(5) == 0 ? (int) edge() : 1 + rnd.nextInt(2);
            b.putInt(ndim);
            for (int d = 0; d < Math.min(Math.max(ndim, 0), 3); d++) {
                b.putLong(rnd.nextInt(3) == 0 ? edge() : 1 + rnd.nextInt(4));
            }
            b.putLong(rnd.nextInt(3) == 0 ? edge() : 4 + rnd.nextInt(12));
            byte[] data = new byte[rnd.nextInt(17)];
            rnd.nextBytes(data);
            b.put(data);
        }
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    /** A fetch body: {@code int32 count} then {@code int32 rank, class, slot} each. */
    private byte[] slots() {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 + 3 * 4 * 4);
        int count = rnd.nextInt(3) == 0 ? (int) edge() : rnd.nextInt(4);
        b.putInt(count);
        for (int i = 0; i < Math.min(Math.max(count, 0), 4); i++) {
            b.putInt((int) edge()).putInt(rnd.nextInt(3)).putInt(rnd.nextInt(3));
        }
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    /** A number at the edges of int32/int64, as a long. */
    private long edge() {
        return pick(List.of(0L, -1L, 1L, 16L, 65536L, 65537L, (long) Integer.MAX_VALUE, (long) Integer.MIN_VALUE,
                Long.MAX_VALUE, Long.MIN_VALUE, 1L << 31, 1L << 40));
    }

    private byte[] json() {
        String v = "{\"tp\":" + number() + ",\"pp\":" + number() + ",\"dp\":" + number() + "}";
        String dev = pick(List.of("[[0]]", "[[0,0],[0,1]]", "[]", "null", "[[-1,2147483647]]", "[[0,0],[0,0]]", "\"x\""));
        String body = pick(List.of(
                "{\"from\":" + v + ",\"to\":" + v + ",\"devices\":" + dev + "}",
                "{\"to\":" + v + ",\"devicesPerWorker\":" + number() + ",\"firstWorker\":" + number() + "}",
                "{\"size\":" + number() + ",\"devicesPerWorker\":" + number() + "}",
                "{\"devices\":" + dev + ",\"atStep\":" + number() + ",\"saveTimeoutSeconds\":" + number() + "}",
                "{\"atStep\":" + number() + ",\"reason\":\"" + "r".repeat(rnd.nextInt(100)) + "\"}",
                "{\"world\":" + pick(List.of("[0]", "[0,1]", "[]", "[-1]", "[2147483647]", "null")) + ",\"config\":" + v + "}",
                "{\"ranks\":[0],\"world\":[0,1],\"config\":" + v + "}",
                "{\"indexText\":\"1\\n/etc/shadow 1\\n0 652\\n\",\"globalBatch\":" + number() + ",\"dpSize\":" + number()
                        + ",\"shuffle\":false,\"progress\":" + number() + ",\"ranks\":[0,0]}",
                "{\"index\":\"" + pick(List.of("/proc/self/environ", "http://127.0.0.1:1/x", "file:///etc/passwd",
                        "../../etc/passwd", "")) + "\",\"globalBatch\":1,\"dpSize\":1}",
                "{\"memoryPerDevice\":" + number() + ",\"parallelizer\":{\"table\":{\"" + number() + "\":" + v + "}}}",
                "{\"linkRate\":\"" + pick(List.of("10gbit", "fast", "-1", "1e400", "")) + "\",\"to\":" + v + "}",
                "[]", "null", "{", "{\"a\":" + "[".repeat(2000) + "}", "\"" + "s".repeat(1000) + "\"", "{\"tp\":{}}"));
        return body.getBytes(StandardCharsets.UTF_8);
    }

    private byte[] plan() {
        WorkerPlan.Builder p = WorkerPlan.newBuilder().setJob(rnd.nextBoolean() ? JOB : "other").setPlanId("p" + rnd.nextInt(3))
                .setWorker(rnd.nextInt(3) - 1).setStep(rnd.nextLong() % 1000);
        int devices = rnd.nextInt(3);
        for (int i = 0; i < devices; i++) {
            p.addSourceDevices(Device.newBuilder().setWorker(rnd.nextInt(3) - 1).setLocal(rnd.nextInt(3)));
        }
        p.putDaemons(rnd.nextInt(3), pick(List.of("127.0.0.1:1", "", "x", "127.0.0.1:99999")));
        int shards = rnd.nextInt(3);
        for (int i = 0; i < shards; i++) {
            Shard.Builder s = Shard.newBuilder().setDestRank(rnd.nextInt(4) - 1).setTensor("t").setKey(name("GET"))
                    .setDtype(pick(DTYPES)).addShape(rnd.nextInt(3) == 0 ? Long.MAX_VALUE / 2 : rnd.nextInt(50));
            s.addPieces(Piece.newBuilder().setKind(rnd.nextInt(4) - 1).setSourceRank(rnd.nextInt(6) - 1)
                    .setSourceKey("k").setBytes(rnd.nextLong()).addDestOffset(rnd.nextLong()));
            s.addPadding(Region.newBuilder().addRanges(Range.newBuilder().setStart(rnd.nextLong()).setStop(rnd.nextLong())));
            p.addShards(s);
        }
        if (rnd.nextBoolean()) {
            p.putFlowRates(rnd.nextInt(3), rnd.nextLong());
        }
        return p.build().toByteArray();
    }

    private byte[] npy() {
        String header = "{'descr': '" + pick(List.of("<f4", "<f8", "|u1", ">f4", "<c8", "O", "<U3", "")) + "', "
                + "'fortran_order': " + pick(List.of("False", "True", "1")) + ", 'shape': (" + number() + ", " + number() + "), }";
        byte[] h = header.getBytes(StandardCharsets.ISO_8859_1);
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', (byte) (1 + rnd.nextInt(3)), 0});
        int len = rnd.nextInt(8) == 0 ? rnd.nextInt(1 << 16) : h.length;
        b.write(len & 0xff);
        b.write(len >> 8);
        b.writeBytes(h);
        byte[] data = new byte[rnd.nextInt(200)];
        rnd.nextBytes(data);
        b.writeBytes(data);
        return b.toByteArray();
    }

    private byte[] mutate(byte[] b) {
        byte[] m = b.clone();
        int flips = 1 + rnd.nextInt(4);
        for (int i = 0; i < flips && m.length > 0; i++) {
            m[rnd.nextInt(m.length)] = (byte) rnd.nextInt(256);
        }
        return rnd.nextInt(4) == 0 && m.length > 1 ? java.util.Arrays.copyOf(m, rnd.nextInt(m.length)) : m;
    }

    /** The request's bytes: a head with odd headers, then the body framed well or badly. */
    private byte[] frame(String method, String target, byte[] body) {
        StringBuilder h = new StringBuilder(method).append(' ').append(target).append(' ')
                .append(rnd.nextInt(40) == 0 ? pick(List.of("HTTP/1.0", "HTTP/2.0", "HTTP/1.1x", "")) : "HTTP/1.1")
                .append("\r\nHost: fuzz\r\n");
        if (rnd.nextBoolean()) {
            h.append("Content-Type: ").append(pick(TYPES)).append("\r\n");
        }
        switch (rnd.nextInt(25)) {
            case 0 -> h.append("Origin: https://evil.example\r\n");
            case 1 -> h.append("x-tensor-crc32c: ").append(number()).append("\r\n");
            case 2 -> h.append("x-tenplex-pace: ").append(number()).append("\r\n");
            case 3 -> h.append("Expect: 100-continue\r\n");
            case 4 -> h.append(": novalue\r\n");
            case 5 -> h.append("X-Nul: a\u0000b\r\n");
            case 6 -> h.append("X-Long: ").append("v".repeat(70_000)).append("\r\n");
            case 7 -> h.append("x-replace: true\r\n");
            case 8 -> h.append("Connection: close\r\n");
            case 9 -> h.append("Accept: application/x-npy\r\n");
            case 10 -> h.append("x-tensor-dtype: ").append(pick(DTYPES)).append("\r\nx-tensor-dims: ").append(dims()).append("\r\n");
            default -> { }
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int framing = rnd.nextInt(10);
        if (framing < 6) {
            h.append("Content-Length: ").append(body.length).append("\r\n\r\n");
            out.writeBytes(h.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.writeBytes(body);
        } else if (framing < 8) {
            h.append("Transfer-Encoding: ").append(rnd.nextInt(6) == 0 ? pick(List.of("gzip, chunked", "Chunked",
                    "chunked, identity", "x")) : "chunked").append("\r\n\r\n");
            out.writeBytes(h.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.writeBytes(chunked(body));
        } else if (framing == 8) {
            h.append("Content-Length: ").append(pick(List.of("-1", "abc", body.length + ", " + (body.length + 1),
                    "99999999999999999999", Integer.toString(Math.max(0, body.length - 1)))))
                    .append("\r\n\r\n");
            out.writeBytes(h.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.writeBytes(body);
        } else {
            h.append("\r\n");
            out.writeBytes(h.toString().getBytes(StandardCharsets.ISO_8859_1));
        }
        return out.toByteArray();
    }

    private byte[] chunked(byte[] body) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int pos = 0;
        boolean bad = rnd.nextInt(3) == 0;
        while (pos < body.length) {
            int n = Math.min(body.length - pos, 1 + rnd.nextInt(5000));
            String size = Integer.toHexString(n);
            if (bad && rnd.nextInt(3) == 0) {
                size = pick(List.of("zz", "-5", "100000000000000000000", size + ";" + "e".repeat(70_000), size + " ",
                        Integer.toHexString(n + 1)));
            }
            String eol = bad && rnd.nextInt(4) == 0 ? "\n" : "\r\n";
            out.writeBytes((size + eol).getBytes(StandardCharsets.ISO_8859_1));
            out.write(body, pos, n);
            out.writeBytes((bad && rnd.nextInt(4) == 0 ? "" : "\r\n").getBytes(StandardCharsets.ISO_8859_1));
            pos += n;
        }
        out.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
        return out.toByteArray();
    }
}
