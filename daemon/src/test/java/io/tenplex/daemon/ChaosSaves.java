package io.tenplex.daemon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.http.HttpResponse;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How the chaos driver writes a rank's tree as training would: over REST (a {@code PUT} per tensor
 * and file under {@code /job/<job>/save/<rank>/}), or through the daemon's shared memory (reserve a
 * segment, check its header, write every entry at its offset, commit and seal in one call). Both
 * answer the seal's (or the refusal's) HTTP answer.
 */
final class ChaosSaves {
    static final String JOB = "chaos";
    /** How a refusal starts when the reserved segment faulted under the writes (SIGBUS, here an InternalError). */
    static final String FAULTED = "writing the segment faulted";
    private static final ObjectMapper JSON = new ObjectMapper();
    private final ChaosCluster cluster;

    ChaosSaves(ChaosCluster cluster) {
        this.cluster = cluster;
    }

    /** The tree of {@code rank}: tensor keys and value files, path relative to the rank's tree, to bytes. */
    static Map<String, byte[]> tree(Ptc ptc, int rank, Map<String, io.tenplex.transform.ReferenceInterpreter.Bytes> shards,
            long step) {
        Map<String, byte[]> t = new LinkedHashMap<>();
        for (Ptc.Shard s : ptc.shards(rank)) {
            t.put(s.key(), shards.get(s.key()).data());
        }
        for (ValueSpec v : ptc.model().values()) {
            t.put(v.key(), (v.key() + " of rank " + rank + " at step " + step).getBytes(StandardCharsets.UTF_8));
        }
        return t;
    }

    /**
     * Writes the tree over REST, after removing what the rank saved before; null when every write was
     * stored, else the failing answer's summary.
     */
    String putTree(int w, int rank, Ptc ptc, Map<String, byte[]> tree) throws IOException, InterruptedException {
        String dir = "/api/v1/%s/job/" + JOB + "/save/" + rank + "/";
        HttpResponse<byte[]> cleared = cluster.send(w, "DELETE", dir.formatted("dirs") + "?recursive=true", null);
        if (cleared.statusCode() != 200 && cleared.statusCode() != 404) { // the last save's tree, maybe another configuration's
            return "DELETE of the last save: " + summary(cleared);
        }
        for (Ptc.Shard s : ptc.shards(rank)) {
            String dims = String.join(",", Arrays.stream(s.shape().dims()).mapToObj(Long::toString).toList());
            String path = dir.formatted("tensors") + s.key() + "?replace=true&dtype=" + s.spec().dtype().wireName()
                    + "&dims=" + dims;
            HttpResponse<byte[]> r = cluster.send(w, "PUT", path, tree.get(s.key()));
            if (r.statusCode() != 200 && r.statusCode() != 201) {
                return "PUT " + s.key() + ": " + summary(r);
            }
        }
        for (ValueSpec v : ptc.model().values()) {
            HttpResponse<byte[]> r = cluster.send(w, "PUT", dir.formatted("files") + v.key() + "?replace=true",
                    tree.get(v.key()));
            if (r.statusCode() != 200 && r.statusCode() != 201) {
                return "PUT " + v.key() + ": " + summary(r);
            }
        }
        return null;
    }

    /** Seals {@code rank}'s save as {@code step} on worker {@code w}. */
    HttpResponse<byte[]> seal(int w, int rank, long step, String config) throws IOException, InterruptedException {
        return cluster.send(w, "POST", "/api/v1/jobs/" + JOB + "/saves/" + step + "/ranks/" + rank,
                sealBody(step, config, null).getBytes(StandardCharsets.UTF_8));
    }

    private static String sealBody(long step, String config, String order) {
        return "{\"step\": " + step + ", \"world\": " + ChaosCluster.WORKERS + ", \"config\": " + config
                + (order == null ? "" : ", \"order\": " + order) + "}";
    }

    /** What a save through shared memory came to: the commit's answer, or why it went over REST instead. */
    record Shared(HttpResponse<byte[]> committed, String refused) {}

    /**
     * Saves {@code rank}'s tree through worker {@code w}'s shared memory and seals it; a refused
     * reservation (507 full, 503 none) or a segment that could not be written is answered as {@code
     * refused}, the caller then saves over REST. {@code beforeWrite} runs between the reservation and
     * the writes (the chaos fills the tmpfs there).
     */
    Shared sharedSave(int w, int rank, long step, String config, Ptc ptc, Map<String, byte[]> tree,
            Runnable beforeWrite) throws IOException, InterruptedException {
        StringBuilder tensors = new StringBuilder();
        StringBuilder order = new StringBuilder();
        for (Ptc.Shard s : ptc.shards(rank)) {
            tensors.append(tensors.length() == 0 ? "" : ",").append("{\"path\": \"").append(s.key())
                    .append("\", \"dtype\": \"").append(s.spec().dtype().wireName()).append("\", \"shape\": ")
                    .append(Arrays.toString(s.shape().dims())).append('}');
            order.append(order.length() == 0 ? "" : ",").append('"').append(s.key()).append('"');
        }
        StringBuilder files = new StringBuilder();
        for (ValueSpec v : ptc.model().values()) {
            files.append(files.length() == 0 ? "" : ",").append("{\"path\": \"").append(v.key()).append("\", \"size\": ")
                    .append(tree.get(v.key()).length).append('}');
            order.append(",\"").append(v.key()).append('"');
        }
        String reserve = "{\"pid\": " + ProcessHandle.current().pid() + ", \"start\": " + processStart()
                + ", \"lease\": 120, \"tensors\": [" + tensors + "], \"files\": [" + files + "]}";
        HttpResponse<byte[]> r = cluster.send(w, "POST", "/api/v1/jobs/" + JOB + "/shared/saves/" + rank,
                reserve.getBytes(StandardCharsets.UTF_8));
        if (r.statusCode() != 201) {
            return new Shared(null, summary(r));
        }
        JsonNode res = JSON.readTree(r.body());
        String id = res.path("id").asText();
        beforeWrite.run();
        String wrong = write(res, tree);
        if (wrong != null) {
            cluster.send(w, "DELETE", "/api/v1/jobs/" + JOB + "/shared/" + id, null);
            return new Shared(null, wrong);
        }
        return new Shared(cluster.send(w, "POST", "/api/v1/jobs/" + JOB + "/shared/saves/" + rank + "/" + id + "/commit",
                sealBody(step, config, "[" + order + "]").getBytes(StandardCharsets.UTF_8)), null);
    }

    /** Writes every entry into the reserved segment; null when done, else why not (a header that does not match). */
    private static String write(JsonNode res, Map<String, byte[]> tree) throws IOException {
        byte[] header = ("TENPLEX-SHM 1\n" + res.path("nonce").asText() + "\n").getBytes(StandardCharsets.US_ASCII);
        try (RandomAccessFile f = new RandomAccessFile(res.path("file").asText(), "rw");
                FileChannel ch = f.getChannel()) {
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, res.path("capacity").asLong());
            byte[] got = new byte[header.length];
            m.get(0, got);
            if (!Arrays.equals(got, header)) {
                return "segment " + res.path("file").asText() + " does not begin with its header";
            }
            for (String list : new String[] {"tensors", "files"}) {
                for (JsonNode e : res.path(list)) {
                    byte[] b = tree.get(e.path("path").asText());
                    m.put(Math.toIntExact(e.path("offset").asLong()), b);
                }
            }
            return null;
        } catch (InternalError e) { // a page of the segment could not be had (tmpfs full): SIGBUS in this JVM
            return FAULTED + ": " + e;
        }
    }

    /** This process's start time as the daemon checks it (field 22 of {@code /proc/self/stat}). */
    private static long processStart() throws IOException {
        String stat = Files.readString(java.nio.file.Path.of("/proc/self/stat"));
        return Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[19]);
    }

    static String summary(HttpResponse<byte[]> r) {
        String body = new String(r.body(), StandardCharsets.UTF_8);
        return r.statusCode() + " " + r.headers().firstValue("X-Tenplex-Error-Code").orElse("-") + " "
                + body.substring(0, Math.min(300, body.length()));
    }
}
