package io.tenplex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.server.peer.DaemonLink;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Recovery from a lost worker across real daemons on shaped links (bench/netns-recover.sh starts
 * four daemons with {@code --peers}, one per network namespace): a GPT-like job saved as (2,2,1),
 * rank r on worker r, with partner copies ({@code partners}) or erasure-coded groups
 * ({@code erasure}); one daemon killed with SIGKILL by PID; then {@code POST .../resources} with
 * {@code "recover": true} onto the three survivors as (1,3,1), timed until the resource change is
 * done (the new configuration's load is in place). The time is compared with the network lower bound
 * of {@link RecoveryBound}.
 *
 * <p>Usage: {@code RecoveryBench <rate bit/s> <partners|erasure> <lost worker> [--cold] <host:port=pid> x4}
 */
public final class RecoveryBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final DaemonLink LINK = DaemonLink.plain(System.getenv("TENPLEX_TOKEN"));
    static final ParallelConfig FROM = ParallelConfig.of(2, 2, 1);
    static final ParallelConfig TO = ParallelConfig.of(1, 3, 1);

    private RecoveryBench() {
    }

    public static void main(String[] argv) throws Exception {
        double rate = Double.parseDouble(argv[0]);
        boolean partners = argv[1].equals("partners");
        int lost = Integer.parseInt(argv[2]);
        boolean warm = true;
        List<String> daemons = new ArrayList<>();
        List<Long> pids = new ArrayList<>();
        for (int i = 3; i < argv.length; i++) {
            if (argv[i].equals("--cold")) {
                warm = false;
                continue;
            }
            daemons.add(argv[i].substring(0, argv[i].indexOf('=')));
            pids.add(Long.parseLong(argv[i].substring(argv[i].indexOf('=') + 1)));
        }
        String tiers = partners ? "{\"partners\": 1}" : "{\"groupSize\": 3, \"parity\": 1}";
        String level = partners ? "partners" : "erasure";
        if (warm) { // the daemons' save, copy and transfer paths compiled once, as in a long-running deployment
            Model small = MegatronLayout.model(new MegatronLayout.Shape(6, 256, 4, 4, 1024, 4096, 512, 128, DType.F16,
                    false, true));
            prepare(small, daemons, "warmup", tiers, level);
            String to = "{\"model\": " + ModelSpecJson.write(small) + ", \"to\": {\"tp\": 1, \"pp\": 1, \"dp\": 4, "
                    + "\"devicesPerWorker\": 1}, \"step\": 11}";
            JsonNode s = JSON.readTree(NetReconfigureBench.post(LINK.uri(daemons.get(0),
                    new JobLayout("warmup").apiReconfigure(false)), to));
            NetReconfigureBench.get(LINK.uri(daemons.get(0), s.path("status").asText() + "?wait=true"));
            delete(daemons, "warmup");
        }
        Model model = MegatronLayout.model(new MegatronLayout.Shape(6, 512, 8, 8, 2048, 16384, 512, 128, DType.F16,
                false, true));
        prepare(model, daemons, "rec", tiers, level);
        measure(model, daemons, pids, lost, rate, partners);
    }

    /** Saves the job as {@link #FROM} (rank r on worker r), seals it, waits until every daemon reached {@code level}. */
    private static void prepare(Model model, List<String> daemons, String job, String tiers, String level)
            throws Exception {
        for (String d : daemons) {
            send(d, "PUT", new JobLayout(job).api("/tiers"), tiers);
        }
        NetReconfigureBench.save(ptc(model, FROM, List.of(0, 1, 2, 3)), daemons, job);
        String config = "{\"tp\": 2, \"pp\": 2, \"dp\": 1, \"devicesPerWorker\": 1, \"firstWorker\": 0}";
        long t0 = System.nanoTime();
        for (int rank = 0; rank < 4; rank++) {
            send(daemons.get(rank), "POST", new JobLayout(job).api("/saves/10/ranks/" + rank),
                    "{\"world\": 4, \"config\": " + config + "}");
        }
        for (String d : daemons) {
            while (!levels(d, job).contains(level)) {
                if (System.nanoTime() - t0 > TimeUnit.MINUTES.toNanos(10)) {
                    throw new IllegalStateException(d + " did not reach " + level);
                }
                java.util.concurrent.locks.LockSupport.parkNanos(50_000_000L); // polling a remote condition
            }
        }
        System.out.printf(Locale.ROOT, "%s: saved %.0f MiB, %s level reached on every daemon %.1f s after the seal%n",
                job, model.bytes() / 1048576.0, level, (System.nanoTime() - t0) / 1e9);
    }

    private static void measure(Model model, List<String> daemons, List<Long> pids, int lost, double rate,
            boolean partners) throws Exception {
        List<Integer> survivors = new ArrayList<>();
        StringBuilder devices = new StringBuilder();
        for (int w = 0; w < daemons.size(); w++) {
            if (w != lost) {
                survivors.add(w);
                devices.append(devices.length() > 0 ? "," : "").append('[').append(w).append(",0]");
            }
        }
        String coordinator = daemons.get(survivors.get(0));
        send(coordinator, "PUT", "/api/v1/files/job/rec/model.json", ModelSpecJson.write(model));
        ProcessHandle victim = ProcessHandle.of(pids.get(lost)).orElseThrow();
        victim.destroyForcibly();
        victim.onExit().get(30, TimeUnit.SECONDS);
        String body = "{\"devices\": [" + devices + "], \"config\": {\"tp\": " + TO.tp() + ", \"pp\": " + TO.pp()
                + ", \"dp\": " + TO.dp() + "}, \"recover\": true}";
        long t0 = System.nanoTime();
        JsonNode started = JSON.readTree(send(coordinator, "POST", new JobLayout("rec").api("/resources"), body));
        JsonNode end = JSON.readTree(NetReconfigureBench.get(LINK.uri(coordinator,
                started.path("status").asText() + "?wait=true")));
        double wall = (System.nanoTime() - t0) / 1e9;
        if (!end.path("state").asText().equals("done")) {
            throw new IllegalStateException("recovery did not finish: " + end);
        }
        JsonNode rec = end.path("reconfiguration");
        // as the daemon plans it (ConfigJson): the new last stage holds the tied head, filled from the word embeddings
        RecoveryBound bound = RecoveryBound.of(ptc(MegatronLayout.asSaved(model, FROM.pp()), FROM, List.of(0, 1, 2, 3)),
                ptc(MegatronLayout.forStages(model, TO.pp()), TO, survivors), lost, partners);
        long most = 0;
        for (String side : new String[] {"sentByWorker", "receivedByWorker"}) {
            for (JsonNode n : rec.path("report").path(side)) {
                most = Math.max(most, n.asLong());
            }
        }
        double lower = bound.bytes() * 8 / rate;
        System.out.printf(Locale.ROOT, "RESULT %s lost=%d: wall %.2f s, lower bound %.2f s (%.0f MiB into one worker: "
                + "%s), ratio %.2f; plan moved %.0f MiB inter-worker, at most %.0f MiB in or out of one worker "
                + "(%.2f s at the link rate); phases %s; change phases %s; sources %s%n", partners ? "L2" : "L3", lost, wall,
                lower, bound.bytes() / 1048576.0, bound.how(), wall / lower,
                rec.at("/report/interWorkerBytes").asLong() / 1048576.0, most / 1048576.0, most * 8 / rate,
                rec.path("phaseMillis"), end.path("phaseMillis"), rec.path("sources"));
    }

    static Ptc ptc(Model m, ParallelConfig c, List<Integer> workers) {
        List<Device> devices = new ArrayList<>();
        for (int r = 0; r < c.worldSize(); r++) {
            devices.add(new Device(workers.get(r), 0));
        }
        return new Ptc(m, c, RankLayout.MEGATRON, StageMap.uniform(m.layers(), c.pp()), devices);
    }

    private static String levels(String daemon, String job) throws Exception {
        for (JsonNode g : JSON.readTree(NetReconfigureBench.get(LINK.uri(daemon, new JobLayout(job).api("/generations"))))
                .path("generations")) {
            if (g.path("step").asLong() == 10) {
                return g.path("levels").toString();
            }
        }
        return "";
    }

    private static String send(String daemon, String method, String path, String body) throws Exception {
        HttpResponse<String> r = LINK.http().send(LINK.authorize(HttpRequest.newBuilder(LINK.uri(daemon, path)))
                .method(method, HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() >= 300) {
            throw new IllegalStateException(method + " " + path + ": " + r.statusCode() + " " + r.body());
        }
        return r.body();
    }

    private static void delete(List<String> daemons, String job) throws Exception {
        for (String d : daemons) {
            LINK.http().send(LINK.authorize(HttpRequest.newBuilder(LINK.uri(d, "/delete?path="
                    + new JobLayout(job).root()))).DELETE().build(), HttpResponse.BodyHandlers.discarding());
        }
    }
}
