package io.tenplex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.server.peer.DaemonLink;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

/**
 * Reconfigures a GPT-like job across real daemons whose links are shaped to the same rate
 * (bench/netns-reconfigure.sh starts one daemon per network namespace), and compares the wall time
 * with the network lower bound: the most bytes any worker must send or receive, divided by the link
 * rate. One GPU per worker.
 *
 * <p>Usage: {@code NetReconfigureBench <rate bit/s> [--central] [--unpaced] [--cold] [--only NAME] <host:port>...};
 * every daemon plans its own part of each change; every reconfiguration names the link rate, so its flows are paced; with {@code --unpaced} every
 * case also runs without it (flows left to TCP) and the two times are compared;
 * with {@code --central} every case also runs in the Tenplex-Central mode (all pieces through worker
 * 0) and the two times are compared. Unless {@code --cold} is given, the last case runs three times
 * first with a small model so that the daemons' transfer paths are compiled, as in a long-running
 * deployment.
 */
public final class NetReconfigureBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** How the daemons are reached (plain HTTP; the token from TENPLEX_TOKEN, if any). */
    private static final DaemonLink LINK = DaemonLink.plain(System.getenv("TENPLEX_TOKEN"));

    record Case(String name, ParallelConfig from, ParallelConfig to) {}

    /** The command line: the link rate in bits/s, then flags and daemon addresses. */
    private record Args(double rate, boolean central, String only, boolean warmup, boolean unpaced,
            List<String> daemons) {
        static Args parse(String[] args) {
            boolean central = false;
            String only = null;
            boolean warmup = true;
            boolean unpaced = false;
            List<String> daemons = new ArrayList<>();
            for (int i = 1; i < args.length; i++) {
                switch (args[i]) {
                    case "--central" -> central = true;
                    case "--unpaced" -> unpaced = true;
                    case "--cold" -> warmup = false;
                    case "--only" -> only = args[++i];
                    default -> daemons.add(args[i]);
                }
            }
            return new Args(Double.parseDouble(args[0]), central, only, warmup, unpaced, daemons);
        }
    }

    public static void main(String[] argv) throws Exception {
        Args a = Args.parse(argv);
        List<String> daemons = a.daemons();
        double rate = a.rate();
        MegatronLayout.Shape shape = new MegatronLayout.Shape(8, 768, 12, 12, 3072, 16000, 512, 128, DType.F16, false,
                true);
        List<Case> cases = new ArrayList<>(List.of(
                new Case("DP 2->4", ParallelConfig.of(1, 1, 2), ParallelConfig.of(1, 1, 4)),
                new Case("TP 2->4", ParallelConfig.of(2, 1, 1), ParallelConfig.of(4, 1, 1)),
                new Case("PP 2->4", ParallelConfig.of(1, 2, 1), ParallelConfig.of(1, 4, 1))));
        if (daemons.size() >= 8) {
            cases.add(new Case("(4,2,1)->(2,2,2)", ParallelConfig.of(4, 2, 1), ParallelConfig.of(2, 2, 2)));
        }
        System.out.printf(Locale.ROOT, "%d workers (1 GPU each), links %.2f Gbit/s; model %.0f MiB with Adam state%n",
                daemons.size(), rate / 1e9, MegatronLayout.model(shape).bytes() / 1048576.0);
        if (a.warmup()) {
            // Daemons are long-running: compile the transfer paths once with a small model (every worker
            // sends and receives) before measuring, unless --cold is given.
            MegatronLayout.Shape small = new MegatronLayout.Shape(8, 256, 4, 4, 1024, 4000, 512, 128, DType.F16, false,
                    true);
            for (int i = 0; i < 3; i++) {
                run(cases.get(cases.size() - 1), small, daemons, rate, "warmup" + i, false, true, "[warm-up] ");
            }
        }
        int n = 0;
        for (Case c : cases) {
            if (a.only() == null || c.name().startsWith(a.only())) {
                n = measure(c, shape, a, n);
            }
        }
    }

    /** Runs one case (paced peer to peer, and unpaced or central when asked); answers the next job number. */
    private static int measure(Case c, MegatronLayout.Shape shape, Args a, int n) throws Exception {
        double p2p = run(c, shape, a.daemons(), a.rate(), "bench" + n++, false, true, "");
        if (a.unpaced()) {
            double tcp = run(c, shape, a.daemons(), a.rate(), "bench" + n++, false, false, "[unpaced] ");
            System.out.printf(Locale.ROOT, "%-18s paced %.2f s vs unpaced %.2f s%n", c.name(), p2p, tcp);
        }
        if (a.central()) {
            double viaCentral = run(c, shape, a.daemons(), a.rate(), "bench" + n++, true, true, "[central] ");
            System.out.printf(Locale.ROOT, "%-18s peer-to-peer %.2f s vs central %.2f s: %.2fx faster%n", c.name(), p2p,
                    viaCentral, viaCentral / p2p);
        }
        return n;
    }

    private static Ptc ptc(Model m, ParallelConfig c) {
        List<Device> devices = new ArrayList<>();
        for (int r = 0; r < c.worldSize(); r++) {
            devices.add(new Device(r, 0));
        }
        return new Ptc(m, c, RankLayout.MEGATRON, StageMap.uniform(m.layers(), c.pp()), devices);
    }

    private static double run(Case c, MegatronLayout.Shape shape, List<String> daemons, double rate, String job,
            boolean central, boolean paced, String tag) throws Exception {
        Model model = MegatronLayout.model(shape);
        Ptc from = ptc(model, c.from());
        save(from, daemons, job);
        StringBuilder addrs = new StringBuilder("{");
        for (int w = 0; w < daemons.size(); w++) {
            addrs.append(w > 0 ? "," : "").append('"').append(w).append("\": \"").append(daemons.get(w)).append('"');
        }
        addrs.append('}');
        String req = "{\"model\": " + ModelSpecJson.write(model) + ", \"from\": "
                + ParallelConfigJson.write(c.from()).put("devicesPerWorker", 1) + ", \"to\": "
                + ParallelConfigJson.write(c.to()).put("devicesPerWorker", 1) + ", \"daemons\": " + addrs + ", \"step\": 1"
                + (paced ? ", \"linkRate\": " + (long) rate : "")
                + (central ? ", \"central\": true" : "") + "}";
        long t0 = System.nanoTime();
        JsonNode started = JSON.readTree(post(LINK.uri(daemons.get(0), new JobLayout(job).apiReconfigure(false)), req));
        JsonNode end = JSON.readTree(get(LINK.uri(daemons.get(0), started.path("status").asText() + "?wait=true")));
        double wall = (System.nanoTime() - t0) / 1e9;
        long most = 0;
        for (String side : new String[] {"sentByWorker", "receivedByWorker"}) {
            for (Iterator<JsonNode> it = end.path("report").path(side).elements(); it.hasNext(); ) {
                most = Math.max(most, it.next().asLong());
            }
        }
        double bound = most * 8 / rate;
        System.out.printf(Locale.ROOT, "%-18s %s%s: wall %.2f s, lower bound %.2f s (max %.0f MiB in or out of one worker), "
                + "ratio %.2f; inter-worker %.0f MiB; phases %s%n", c.name(), tag,
                end.path("state").asText(), wall, bound,
                most / 1048576.0, bound == 0 ? 0 : wall / bound, end.at("/report/interWorkerBytes").asLong() / 1048576.0,
                end.path("phaseMillis"));
        StringBuilder perWorker = new StringBuilder();
        end.path("workers").fields().forEachRemaining(w -> perWorker.append(' ').append(w.getKey()).append('=')
                .append(String.format(Locale.ROOT, "%.1f", w.getValue().path("executeMillis").asLong() / 1000.0)));
        System.out.println("    execute time per worker (s):" + perWorker);
        for (String d : daemons) {
            LINK.http().send(LINK.authorize(HttpRequest.newBuilder(LINK.uri(d, "/delete?path=" + new JobLayout(job).root()))).DELETE().build(),
                    HttpResponse.BodyHandlers.discarding());
        }
        return wall;
    }

    /** Saves every rank's shards (pseudo-random bytes) into its worker's daemon, a few requests in flight. */
    static void save(Ptc ptc, List<String> daemons, String job) {
        long largest = 0;
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            for (Ptc.Shard s : ptc.shards(rank)) {
                largest = Math.max(largest, s.bytes());
            }
        }
        byte[] noise = new byte[(int) largest];
        new Random(1).nextBytes(noise); // shared, read-only: every body is a prefix of it
        java.util.concurrent.Semaphore window = new java.util.concurrent.Semaphore(16);
        List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            String d = daemons.get(ptc.device(rank).worker());
            for (Ptc.Shard s : ptc.shards(rank)) {
                TensorSpec t = s.spec();
                window.acquireUninterruptibly();
                sent.add(LINK.http().sendAsync(LINK.authorize(HttpRequest.newBuilder(LINK.uri(d, "/api/v1/tensors"
                        + new JobLayout(job).saved(rank, s.key()) + "?dtype=" + t.dtype().wireName() + "&dims=" + s.shape().toWire())))
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(noise, 0, (int) s.bytes())).build(),
                        HttpResponse.BodyHandlers.ofString()).whenComplete((x, e) -> window.release()));
            }
            for (ValueSpec v : ptc.model().values()) {
                sent.add(LINK.http().sendAsync(LINK.authorize(HttpRequest.newBuilder(LINK.uri(d, "/api/v1/files"
                        + new JobLayout(job).saved(rank, v.key())))).PUT(HttpRequest.BodyPublishers.ofString(v.key())).build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
        }
        for (CompletableFuture<HttpResponse<String>> f : sent) {
            HttpResponse<String> resp = f.join();
            if (resp.statusCode() >= 300) {
                throw new IllegalStateException("save failed: " + resp.statusCode() + " " + resp.body());
            }
        }
    }

    static String post(URI url, String body) throws Exception {
        HttpResponse<String> r = LINK.http().send(LINK.authorize(HttpRequest.newBuilder(url))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() >= 300) {
            throw new IllegalStateException(r.statusCode() + " " + r.body());
        }
        return r.body();
    }

    static String get(URI url) throws Exception {
        return LINK.http().send(LINK.authorize(HttpRequest.newBuilder(url)).build(), HttpResponse.BodyHandlers.ofString())
                .body();
    }
}
