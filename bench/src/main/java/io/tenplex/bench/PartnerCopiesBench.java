package io.tenplex.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * L2 and L3 overhead on in-process daemons on loopback ({@code --peers}), one rank per worker: the
 * time of a save's seals (the training-visible part), the time until every daemon holds its partner
 * copies or parity blocks, and the store memory of all daemons before and after, with no tiers,
 * {@code partners} 1, and groups of 4 with one parity block.
 * Usage: {@code PartnerCopiesBench [MiB per rank] [tensors per rank] [runs] [workers]}.
 */
public final class PartnerCopiesBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private PartnerCopiesBench() {
    }

    public static void main(String[] args) throws Exception {
        long mib = args.length > 0 ? Long.parseLong(args[0]) : 64;
        int tensors = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int runs = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        int workers = args.length > 3 ? Integer.parseInt(args[3]) : 8;
        List<Daemon> daemons = start(workers, (mib << 20) * 4);
        String[] tiers = {"{\"partners\": 0}", "{\"partners\": 1}", "{\"groupSize\": 4, \"parity\": 1}"};
        String[] levels = {null, "partners", "erasure"};
        try {
            System.out.printf(Locale.ROOT, "%d daemons, 1 rank each, %d MiB in %d tensors per rank%n", workers, mib,
                    tensors);
            for (int run = 0; run < runs; run++) {
                for (int t = 0; t < tiers.length; t++) {
                    measure(daemons, "t" + t + "r" + run, tiers[t], levels[t], (mib << 20) / tensors, tensors);
                }
            }
        } finally {
            daemons.forEach(Daemon::close);
        }
    }

    private static List<Daemon> start(int n, long memory) throws Exception {
        Map<Integer, InetSocketAddress> peers = new LinkedHashMap<>();
        for (int w = 0; w < n; w++) {
            try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                peers.put(w, new InetSocketAddress("127.0.0.1", s.getLocalPort()));
            }
        }
        List<Daemon> out = new ArrayList<>();
        for (int w = 0; w < n; w++) {
            out.add(Daemon.start(new DaemonConfig("127.0.0.1", peers.get(w).getPort(), memory, "bench", null, null,
                    peers)));
        }
        return out;
    }

    private static void measure(List<Daemon> daemons, String job, String tiers, String level, long tensorBytes,
            int tensors) throws Exception {
        for (int w = 0; w < daemons.size(); w++) {
            call(daemons.get(w), "PUT", "/api/v1/jobs/" + job + "/tiers", tiers);
            save(daemons.get(w).store(), job, w, tensorBytes, tensors);
        }
        long before = used(daemons);
        long t0 = System.nanoTime();
        for (int w = 0; w < daemons.size(); w++) {
            call(daemons.get(w), "POST", "/api/v1/jobs/" + job + "/saves/10/ranks/" + w, "{\"world\": "
                    + daemons.size() + ", \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": " + daemons.size()
                    + ", \"devicesPerWorker\": 1}}");
        }
        long sealed = System.nanoTime() - t0;
        if (level != null) {
            for (Daemon d : daemons) {
                while (!call(d, "GET", "/api/v1/jobs/" + job + "/generations", null).toString().contains(level)) {
                    java.util.concurrent.locks.LockSupport.parkNanos(2_000_000L); // polling a remote condition
                }
            }
        }
        long copied = System.nanoTime() - t0;
        long after = used(daemons);
        System.out.printf(Locale.ROOT, "%-30s seals %.1f ms, in place after %.1f ms, store %d MiB -> %d MiB"
                + " (x%.2f)%n", tiers, sealed / 1e6, copied / 1e6, before >> 20, after >> 20, (double) after / before);
        for (Daemon d : daemons) {
            call(d, "DELETE", "/api/v1/dirs/job/" + job + "?recursive=true", null);
        }
    }

    private static void save(TensorStore store, String job, int rank, long bytes, int tensors) {
        ByteBuffer fill = ByteBuffer.allocate((int) Math.min(bytes, 1 << 20));
        for (int i = 0; i < fill.capacity(); i += 8) {
            fill.putLong(i, (i + rank * 31L) * 0x9E3779B97F4A7C15L);
        }
        for (int t = 0; t < tensors; t++) {
            Blob blob = store.allocator().allocate(bytes);
            for (long off = 0; off < bytes; off += fill.capacity()) {
                blob.write(off, fill.duplicate().clear().limit((int) Math.min(fill.capacity(), bytes - off)));
            }
            store.putTensor(StorePath.parse("/job/" + job + "/save/" + rank + "/t" + t),
                    new TensorMeta(DType.fromName("u8"), Shape.of(bytes)), blob,
                    BlockChecksums.compute(blob, store.checksumBlock()), true);
        }
    }

    private static long used(List<Daemon> daemons) {
        return daemons.stream().mapToLong(d -> d.store().allocator().usedBytes()).sum();
    }

    private static JsonNode call(Daemon d, String method, String path, String body) throws Exception {
        HttpRequest.BodyPublisher p = body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body);
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + d.address().getPort()
                + path)).method(method, p).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() >= 300) {
            throw new IllegalStateException(method + " " + path + ": " + r.statusCode() + " " + r.body());
        }
        return r.body().isEmpty() ? JSON.nullNode() : JSON.readTree(r.body());
    }
}
