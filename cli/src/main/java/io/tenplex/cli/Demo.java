package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
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
import io.tenplex.ptc.TensorMeta;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.store.DataRef;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.transform.Sharding;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tenplex demo}: three daemons on loopback (workers 0-2, 4 GPUs each), a synthetic GPT-like
 * model saved under (2,2,2) on workers 0-1, reconfigured to (4,1,2), then to (1,4,1) on worker 2
 * alone, then back to (2,2,2); after each step every new shard is compared bit for bit with
 * sharding the original tensors directly, and the report is printed.
 */
@Command(name = "demo", description = "Run a local three-daemon reconfiguration demo.")
final class Demo implements Callable<Integer> {
    @Option(names = "--layers", defaultValue = "8", description = "Transformer layers (default: ${DEFAULT-VALUE}).")
    int layers;

    @Option(names = "--hidden", defaultValue = "256", description = "Hidden size (default: ${DEFAULT-VALUE}).")
    int hidden;

    @Option(names = "--vocab", defaultValue = "5000", description = "Vocabulary (default: ${DEFAULT-VALUE}).")
    int vocab;

    private static final JobLayout JOB = new JobLayout("demo");

    @Override
    public Integer call() throws Exception {
        Model model = MegatronLayout.model(new MegatronLayout.Shape(layers, hidden, 8, 8, 4 * hidden, vocab, 128, 128,
                DType.F16, false, true));
        System.out.printf("model: %d tensors, %s (GPT-like: %d layers, hidden %d, vocab %d, Adam state)%n",
                model.tensors().size(), Human.bytes(model.bytes()), layers, hidden, vocab);
        List<Daemon> daemons = new ArrayList<>();
        try {
            for (int w = 0; w < 3; w++) {
                daemons.add(Daemon.start(new DaemonConfig("127.0.0.1", 0, 2L << 30, "demo", null, null)));
            }
            Map<String, byte[]> full = fullTensors(model);
            Step a = new Step(ParallelConfig.of(2, 2, 2), 0);
            Step b = new Step(ParallelConfig.of(4, 1, 2), 0);
            Step c = new Step(ParallelConfig.of(1, 4, 1), 2);
            save(daemons, ptc(model, a), full);
            System.out.println("saved under " + a.config + " on workers 0-1");
            boolean ok = true;
            Step from = a;
            long step = 100;
            for (Step to : List.of(b, c, a)) {
                ok &= reconfigure(daemons, model, full, from, to, step);
                from = to;
                step += 100;
            }
            System.out.println(ok ? "demo: every shard of every step verified bit for bit" : "demo: MISMATCHES (see above)");
            return ok ? 0 : 1;
        } finally {
            daemons.forEach(Daemon::close);
        }
    }

    /** A configuration placed on workers from {@code firstWorker}, 4 GPUs each. */
    record Step(ParallelConfig config, int firstWorker) {
        String json() {
            return ParallelConfigJson.write(config).put("devicesPerWorker", 4).put("firstWorker", firstWorker)
                    .toString();
        }
    }

    private static Ptc ptc(Model m, Step s) {
        List<Device> devices = new ArrayList<>();
        for (Device d : Ptc.packedDevices(s.config.worldSize(), 4)) {
            devices.add(new Device(d.worker() + s.firstWorker, d.local()));
        }
        return new Ptc(m, s.config, RankLayout.MEGATRON, StageMap.uniform(m.layers(), s.config.pp()), devices);
    }

    private static Map<String, byte[]> fullTensors(Model m) {
        Random r = new Random(2024);
        Map<String, byte[]> out = new HashMap<>();
        for (TensorSpec t : m.tensors()) {
            byte[] b = new byte[(int) (t.shape().volume() * t.dtype().itemSize())];
            r.nextBytes(b);
            out.put(t.name(), b);
        }
        return out;
    }

    private static void put(TensorStore store, StorePath path, TensorMeta meta, byte[] data) {
        BlobWriter w = BlobWriter.allocate(store.allocator(), data.length, store.checksumBlock());
        w.append(ByteBuffer.wrap(data));
        if (meta == null) {
            store.putFile(path, w.take(), w.checksums(), true);
        } else {
            store.putTensor(path, meta, w.take(), w.checksums(), true);
        }
    }

    private static void save(List<Daemon> daemons, Ptc ptc, Map<String, byte[]> full) {
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            TensorStore store = daemons.get(ptc.device(rank).worker()).store();
            Map<String, Sharding.Bytes> shards = Sharding.shard(ptc, full, rank);
            for (Ptc.Shard s : ptc.shards(rank)) {
                put(store, JOB.saved(rank, s.key()), new TensorMeta(s.spec().dtype(), s.shape()),
                        shards.get(s.key()).data());
            }
            for (ValueSpec v : ptc.model().values()) {
                put(store, JOB.saved(rank, v.key()), null,
                        (v.key() + " saved by rank " + rank).getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    private boolean reconfigure(List<Daemon> daemons, Model model, Map<String, byte[]> full, Step from, Step to, long step)
            throws Exception {
        System.out.println();
        System.out.println("reconfigure " + from.config + " -> " + to.config + " (workers from " + to.firstWorker + ")");
        StringBuilder addrs = new StringBuilder("{");
        for (int w = 0; w < daemons.size(); w++) {
            addrs.append(w > 0 ? "," : "").append('"').append(w).append("\": \"127.0.0.1:")
                    .append(daemons.get(w).address().getPort()).append('"');
        }
        addrs.append('}');
        String request = "{\"model\": " + ModelSpecJson.write(model) + ", \"from\": " + from.json() + ", \"to\": "
                + to.json() + ", \"daemons\": " + addrs + ", \"step\": " + step + "}";
        TenplexCli.Target t = new TenplexCli.Target();
        t.addr = "127.0.0.1:" + daemons.get(0).address().getPort();
        JsonNode started = t.post(JOB.apiReconfigure(false), request);
        JsonNode end = TenplexCli.follow(t, started.path("status").asText(), System.out);
        if (!end.path("state").asText().equals("committed")) {
            return false;
        }
        Ptc ptc = ptc(model, to);
        int shards = 0;
        int bad = 0;
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            TensorStore store = daemons.get(ptc.device(rank).worker()).store();
            for (Map.Entry<String, Sharding.Bytes> e : Sharding.shard(ptc, full, rank).entrySet()) {
                shards++;
                try (DataRef ref = store.openTensor(JOB.loaded(rank, e.getKey()))) {
                    ByteBuffer got = ByteBuffer.allocate((int) ref.size());
                    ref.copyTo(0, ref.size(), got);
                    if (!java.util.Arrays.equals(got.array(), e.getValue().data())) {
                        bad++;
                        System.out.println("  MISMATCH rank " + rank + " " + e.getKey());
                    }
                }
            }
        }
        System.out.println("  verified " + (shards - bad) + " of " + shards + " shards bit for bit");
        for (Daemon d : daemons) { // training relaunches and saves what it loaded
            StorePath load = JOB.load();
            if (d.store().stat(load).isPresent()) {
                d.store().move(load, JOB.source());
            }
        }
        return bad == 0;
    }
}
