package io.tenplex.daemon.audit;

import io.tenplex.jobs.reconfigure.Descriptions;
import io.tenplex.server.control.ChangeAnswer;
import io.tenplex.server.control.ChangeSpec;
import io.tenplex.server.control.DeviceRun;
import io.tenplex.server.control.Placement;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** A hostile client of a running tenplexd's change routes: java HostileChangeClient PORT SCENARIO. */
public final class HostileChangeClient {
    static String base;
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    public static void main(String[] a) throws Exception {
        base = "http://127.0.0.1:" + a[0];
        switch (a[1]) {
            case "baseline" -> post("j", withW(spec(model1(16384, "replicated"), p(1, 1, 1, run(0, 0, 1)), p(1, 1, 1, run(0, 0, 1))))
                    .build(), 0);
            case "dupLayouts" -> dupLayouts(Integer.parseInt(a[2]), Integer.parseInt(a[3]));
            case "holderBlowup" -> holderBlowup(Integer.parseInt(a[2]));
            case "expertDiv0" -> {
                String m = "{\"layers\":1,\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[8],\"layer\":0,"
                        + "\"partition\":{\"kind\":\"expert\",\"expert\":0,\"experts\":1}}]}";
                var to = Placement.newBuilder().setTp(1).setPp(1).setDp(2).setEp(2).addDevices(run(0, 0, 2)).build();
                post("j", spec(m, p(1, 1, 1, run(0, 0, 1)), to).build(), 0);
            }
            case "shapeObject" -> post("j", spec("{\"layers\":1,\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":{\"a\":1},"
                    + "\"layer\":0,\"partition\":{\"kind\":\"replicated\"}}]}", p(1, 1, 1, run(0, 0, 1)), p(1, 1, 1, run(0, 0, 1)))
                    .build(), 0);
            case "hugeBytes" -> post("j", spec(model1(1L << 62, "replicated", "i8"), p(1, 1, 1, run(0, 0, 1)),
                    p(1, 1, 2, run(1, 0, 1), run(2, 0, 1))).build(), 1);
            case "vocabOverflow" -> post("j", spec("{\"layers\":1,\"tensors\":[{\"name\":\"w\",\"dtype\":\"i8\",\"shape\":["
                    + Long.MAX_VALUE + "],\"layer\":0,\"partition\":{\"kind\":\"vocab\",\"dim\":0,\"divisibleBy\":128}}]}",
                    p(1, 1, 1, run(0, 0, 1)), p(2, 1, 1, run(0, 0, 2))).build(), 0);
            case "negLayers" -> post("j", spec("{\"layers\":-4,\"tensors\":[]}", p(1, 1, 1, run(0, 0, 1)),
                    p(1, 1, 1, run(0, 0, 1))).build(), 0);
            case "layout" -> hostileLayout(a[2]);
            case "addr" -> post("j", withW(spec(model1(8, "replicated"), p(1, 1, 1, run(0, 0, 1)), p(1, 1, 1, run(0, 0, 1))))
                    .putDaemons(0, a[2]).build(), 0);
            case "sourceDir" -> post("j", withW(spec(model1(8, "replicated"), p(1, 1, 1, run(0, 0, 1)), p(1, 1, 1, run(0, 0, 1))))
                    .setSourceDir(a[2]).setChangeId("sd" + Math.abs(a[2].hashCode())).build(), 0);
            case "changeId" -> post("j", withW(spec(model1(8, "replicated"), p(1, 1, 1, run(0, 0, 1)), p(1, 1, 1, run(0, 0, 1))))
                    .setChangeId(a[2]).build(), 0);
            case "otherWorker" -> post("j", withW(spec(model1(8, "replicated"), p(1, 1, 1, run(0, 0, 1)), p(1, 1, 1, run(0, 0, 1))))
                    .setChangeId("ow").build(), Integer.parseInt(a[2]));
            case "twice" -> {
                var s = withW(spec(model1(8, "replicated"), p(1, 1, 1, run(0, 0, 1)), p(1, 1, 1, run(0, 0, 1)))).setChangeId("tw").build();
                var s2 = s.toBuilder().setStep(99).build();
                post("j", s, 0);
                post("j", s2, 0);
            }
            case "put" -> {
                byte[] b = new byte[Integer.parseInt(a[2])];
                send("PUT", "/api/v1/jobs/j/descriptions/" + Descriptions.digest(b), b);
            }
            default -> throw new IllegalArgumentException(a[1]);
        }
    }

    /** Old rank 0 saved w (f32[8]). */
    static ChangeSpec.Builder withW(ChangeSpec.Builder b) throws Exception {
        byte[] lb = "[[\"w\",true,1,\"f32\",[8]]]".getBytes(StandardCharsets.UTF_8);
        String ld = Descriptions.digest(lb);
        send("PUT", "/api/v1/jobs/j/descriptions/" + ld, lb);
        return b.clearRankLayouts().clearLayoutDigests().addLayoutDigests(ld).addRankLayouts(0);
    }

    static String model1(long n, String kind) {
        return model1(n, kind, "f32");
    }

    static String model1(long n, String kind, String dtype) {
        return "{\"layers\":1,\"tensors\":[{\"name\":\"w\",\"dtype\":\"" + dtype + "\",\"shape\":[" + n
                + "],\"layer\":0,\"partition\":{\"kind\":\"" + kind + "\"" + (kind.equals("split") ? ",\"dim\":0" : "")
                + "}}],\"values\":[]}";
    }

    static DeviceRun run(int w, int local, int count) {
        return DeviceRun.newBuilder().setWorker(w).setFirstLocal(local).setCount(count).build();
    }

    static Placement p(int tp, int pp, int dp, DeviceRun... runs) {
        var b = Placement.newBuilder().setTp(tp).setPp(pp).setDp(dp).setEp(1);
        for (DeviceRun r : runs) {
            b.addDevices(r);
        }
        return b.build();
    }

    /** A spec naming the model (PUT first), no layouts (every old rank saved nothing). */
    static ChangeSpec.Builder spec(String model, Placement from, Placement to) throws Exception {
        byte[] m = model.getBytes(StandardCharsets.UTF_8);
        String d = Descriptions.digest(m);
        send("PUT", "/api/v1/jobs/j/descriptions/" + d, m);
        int old = from.getTp() * from.getPp() * from.getDp();
        var b = ChangeSpec.newBuilder().setJob("j").setChangeId("c" + System.nanoTime()).setStep(3).setModelDigest(d)
                .setFrom(from).setTo(to).putDaemons(0, "127.0.0.1:1").setSourceDir("save").addParticipants(0)
                .setPreparedTimeoutMillis(1000);
        for (int i = 0; i < old; i++) {
            b.addRankLayouts(-1);
        }
        return b;
    }

    static void dupLayouts(int ranks, int entries) throws Exception {
        StringBuilder l = new StringBuilder("[");
        for (int i = 0; i < entries; i++) {
            l.append(i == 0 ? "" : ",").append("[\"model/w").append(i).append("\",true,1,\"f32\",[8]]");
        }
        byte[] lb = l.append("]").toString().getBytes(StandardCharsets.UTF_8);
        String ld = Descriptions.digest(lb);
        System.out.println("layout bytes " + lb.length);
        send("PUT", "/api/v1/jobs/j/descriptions/" + ld, lb);
        var b = spec(model1(8, "replicated"), p(1, 1, ranks, run(0, 0, ranks)), p(1, 1, 1, run(0, 0, 1)));
        b.clearRankLayouts();
        for (int i = 0; i < ranks; i++) {
            b.addLayoutDigests(ld).addRankLayouts(i);
        }
        post("j", b.build(), 0);
    }

    static void holderBlowup(int n) throws Exception {
        var from = Placement.newBuilder().setTp(n).setPp(1).setDp(1).setEp(1);
        for (int w = 0; w < n; w++) {
            from.addDevices(run(w, 0, 1));
        }
        post("j", spec(model1(n, "split"), from.build(), p(1, 1, 1, run(0, 0, 1))).build(), 0);
    }

    static void hostileLayout(String kind) throws Exception {
        String l = switch (kind) {
            case "deep" -> "[".repeat(5000) + "]".repeat(5000);
            case "dtype" -> "[[\"model/w\",true,1,\"f99\",[8]]]";
            case "shapeOverflow" -> "[[\"model/w\",true,1,\"f64\",[4611686018427387904,4]]]";
            case "dotdot" -> "[[\"../../etc/w\",true,1,\"f32\",[8]]]";
            case "dims" -> "[[\"model/w\",true,2147483647,\"f32\",[8]]]";
            case "notArray" -> "{\"a\":1}";
            case "shortEntry" -> "[[\"model/w\"]]";
            default -> throw new IllegalArgumentException(kind);
        };
        byte[] lb = l.getBytes(StandardCharsets.UTF_8);
        String ld = Descriptions.digest(lb);
        send("PUT", "/api/v1/jobs/j/descriptions/" + ld, lb);
        var b = spec(model1(8, "replicated"), p(1, 1, 1, run(0, 0, 1)), p(1, 1, 1, run(0, 0, 1)));
        b.clearRankLayouts().addLayoutDigests(ld).addRankLayouts(0).setChangeId("lay-" + kind);
        post("j", b.build(), 0);
    }

    static void post(String job, ChangeSpec s, int worker) throws Exception {
        System.out.println("spec bytes " + s.getSerializedSize());
        var r = send("POST", "/api/v1/jobs/" + job + "/changes?worker=" + worker, s.toByteArray());
        if (r.statusCode() == 202 || r.statusCode() == 409) {
            System.out.println("answer: " + ChangeAnswer.parseFrom(r.body()).toString().replace('\n', ' '));
        }
    }

    static HttpResponse<byte[]> send(String method, String path, byte[] body) throws Exception {
        long t0 = System.nanoTime();
        var r = HTTP.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(180))
                .header("Content-Type", "application/x-protobuf")
                .method(method, HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofByteArray());
        String text = new String(r.body(), StandardCharsets.UTF_8);
        System.out.printf("%s %s -> %d in %d ms: %s%n", method, path.length() > 90 ? path.substring(0, 90) : path,
                r.statusCode(), (System.nanoTime() - t0) / 1_000_000, text.length() > 300 ? text.substring(0, 300) : text
                        .replaceAll("[^\\x20-\\x7e]", "?"));
        return r;
    }
}
