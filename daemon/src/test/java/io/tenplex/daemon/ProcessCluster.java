package io.tenplex.daemon;


import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.server.jobs.JobRoutes;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.transform.ReferenceInterpreter;
import java.net.InetSocketAddress;
import java.net.URI;
import io.tenplex.server.peer.DaemonLink;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Real tenplexd processes on loopback (index = worker) and what tests do with them over HTTP. */
public final class ProcessCluster implements AutoCloseable {
    public final List<DaemonProcess> daemons = new ArrayList<>();
    private final Model model;
    private final ObjectMapper json = new ObjectMapper();
    private final DaemonLink link;
    private final List<String> options;

    public ProcessCluster(Model model) {
        this(model, DaemonLink.plain(null));
    }

    /** Daemons started with {@code options} (TLS, token), reached through {@code link}. */
    public ProcessCluster(Model model, DaemonLink link, String... options) {
        this.model = model;
        this.link = link;
        this.options = List.of(options);
    }

    public DaemonProcess start() throws Exception {
        List<String> args = new ArrayList<>(List.of("--port", "0", "--memory-limit", "128m"));
        args.addAll(options);
        DaemonProcess d = DaemonProcess.start(args.toArray(String[]::new));
        daemons.add(d);
        return d;
    }

    @Override
    public void close() throws InterruptedException {
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }

    HttpResponse<byte[]> send(HttpRequest.Builder r) throws Exception {
        return link.http().send(link.authorize(r).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /**
     * Uploads every shard of {@code from} (packed from worker {@code first}) and its values to the
     * daemon of the holding worker under {@code /job/<job>/save/<rank>/}, as training would.
     */
    public Map<String, byte[]> save(String job, Ptc from, int first) throws Exception {
        return save(job, from, first, job.hashCode());
    }

    /** {@link #save(String, Ptc, int)} with values drawn from {@code seed}. */
    public Map<String, byte[]> save(String job, Ptc from, int first, long seed) throws Exception {
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(from, seed);
        var shards = ReferenceInterpreter.shard(from, full);
        for (int rank = 0; rank < from.worldSize(); rank++) {
            String base = daemons.get(from.device(rank).worker() + first).url() + "/api/v1/";
            String dir = "job/" + job + "/save/" + rank + "/";
            for (Ptc.Shard s : from.shards(rank)) {
                String dims = String.join(",", Arrays.stream(s.shape().dims()).mapToObj(Long::toString).toList());
                HttpResponse<byte[]> r = send(HttpRequest.newBuilder(URI.create(base + "tensors/" + dir + s.key()
                        + "?dtype=" + s.spec().dtype().wireName() + "&dims=" + dims)).header("x-replace", "true")
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(shards.get(rank).get(s.key()).data())));
                assertTrue(r.statusCode() == 201 || r.statusCode() == 200, new String(r.body(), StandardCharsets.UTF_8));
            }
            for (ValueSpec v : model.values()) {
                int code = send(HttpRequest.newBuilder(URI.create(base + "files/" + dir + v.key()))
                        .header("x-replace", "true").PUT(HttpRequest.BodyPublishers.ofString(v.key() + " of rank " + rank)))
                        .statusCode();
                assertTrue(code == 201 || code == 200, "file " + v.key() + ": " + code); // 200: replaced
            }
        }
        return full;
    }

    public static String config(ParallelConfig c, int perWorker, int firstWorker) {
        return "{\"tp\": " + c.tp() + ", \"pp\": " + c.pp() + ", \"dp\": " + c.dp() + ", \"devicesPerWorker\": " + perWorker
                + ", \"firstWorker\": " + firstWorker + "}";
    }

    /** Every daemon's address, by worker. */
    Map<Integer, InetSocketAddress> addresses() {
        Map<Integer, InetSocketAddress> m = new LinkedHashMap<>();
        for (int w = 0; w < daemons.size(); w++) {
            m.put(w, daemons.get(w).address());
        }
        return m;
    }

    /** Posts a reconfiguration to worker 0's daemon; returns its status URL. */
    public String reconfigure(String job, String from, String to, Map<Integer, InetSocketAddress> addrs, long step)
            throws Exception {
        return reconfigure(job, from, to, addrs, step, "");
    }

    /** As {@link #reconfigure(String, String, String, Map, long)}, with more fields ({@code , "k": v}) in the request. */
    public String reconfigure(String job, String from, String to, Map<Integer, InetSocketAddress> addrs, long step,
            String more) throws Exception {
        StringBuilder d = new StringBuilder("{");
        addrs.forEach((w, a) -> d.append(d.length() > 1 ? "," : "").append('"').append(w).append("\": \"127.0.0.1:")
                .append(a.getPort()).append('"'));
        String body = "{\"model\": " + ModelSpecJson.write(model) + ", \"from\": " + from + ", \"to\": " + to
                + ", \"daemons\": " + d + "}, \"step\": " + step + more + "}";
        HttpResponse<byte[]> r = send(HttpRequest.newBuilder(URI.create(daemons.get(0).url() + JobRoutes.PREFIX + job
                + "/reconfigure")).POST(HttpRequest.BodyPublishers.ofString(body)));
        assertEquals(202, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        return json.readTree(r.body()).get("status").asText();
    }

    public JsonNode await(String status) throws Exception {
        return json.readTree(send(HttpRequest.newBuilder(URI.create(daemons.get(0).url() + status + "?wait=true"))).body());
    }

    JsonNode json(byte[] body) throws Exception {
        return json.readTree(body);
    }

    byte[] get(DaemonProcess d, String path) throws Exception {
        HttpResponse<byte[]> r = send(HttpRequest.newBuilder(URI.create(d.url() + path)));
        assertEquals(200, r.statusCode(), path + ": " + new String(r.body(), StandardCharsets.UTF_8));
        return r.body();
    }

    /**
     * Every shard of {@code to} (packed from worker 0) under {@code /job/<job>/load} on the daemon
     * of its worker shifted by {@code first} in {@code workers}, byte for byte.
     */
    public void assertLoaded(String job, List<DaemonProcess> workers, Ptc to, int first, Map<String, byte[]> full)
            throws Exception {
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            DaemonProcess d = workers.get(to.device(rank).worker() + first);
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), get(d, "/api/v1/tensors/job/" + job + "/load/" + rank + "/"
                        + e.getKey()), job + ": rank " + rank + " " + e.getKey());
            }
        }
    }
}
