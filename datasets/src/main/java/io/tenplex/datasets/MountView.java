package io.tenplex.datasets;

import io.tenplex.store.JobNamespace;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.Npy;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Builds the read-only view of a mount in its two layouts (paths relative to {@code /job/<job>/}):
 *
 * <ul>
 *   <li>the prototype's: {@code head.txt}, {@code progress-<P>-cluster-of-<N>.txt} and
 *       {@code progress/<P>/cluster-of-<N>/rank-<RRR>/} with {@code list.txt},
 *       {@code batch-sizes.txt} and shard files {@code <NNNN>.tf_record} with {@code .idx} and
 *       {@code .meta};
 *   <li>the simple one: {@code dataset/mount.json} and {@code dataset/rank-<r>/} with
 *       {@code samples} (the rank's sample bytes in read order), {@code offsets.npy} (int64, count+1
 *       byte offsets into {@code samples}) and {@code ids.npy} (int64 global sample ids).
 * </ul>
 */
final class MountView {
    /**
     * Jackson writes {@code dataset/mount.json}, a file of the view that loaders (Python's
     * {@code json}) parse, so that its text is always valid JSON.
     */
    private static final ObjectMapper JSON = new ObjectMapper();

    private final DatasetMount mount;
    private final Map<String, ViewNode> nodes = new HashMap<>();
    private final String root;
    private final String progressDir;

    private MountView(DatasetMount mount) {
        this.mount = mount;
        MountParams p = mount.partition.params();
        this.root = JobNamespace.root(mount.job) + "/";
        this.progressDir = "progress/" + p.progress() + "/cluster-of-" + p.dpSize();
    }

    /** The view's entries by path relative to the job directory ({@code ""}: the job directory). */
    static Map<String, ViewNode> of(DatasetMount mount) {
        MountView v = new MountView(mount);
        v.entryPoints();
        for (int r : mount.ranks) {
            v.prototypeRank(r, mount.shards.get(r));
            v.simpleRank(r, mount.shards.get(r));
        }
        return v.nodes;
    }

    static String rankName(int r) {
        return String.format(Locale.ROOT, "rank-%03d", r);
    }

    static String shardName(int f) {
        return String.format(Locale.ROOT, "%04d.tf_record", f);
    }

    private void entryPoints() {
        MountParams p = mount.partition.params();
        String progressFile = "progress-" + p.progress() + "-cluster-of-" + p.dpSize() + ".txt";
        nodes.put("", ViewNode.dir());
        put("head.txt", text(root + progressFile + "\n"));
        StringBuilder rankDirs = new StringBuilder();
        for (int r = 0; r < p.dpSize(); r++) {
            rankDirs.append(root).append(progressDir).append('/').append(rankName(r)).append('\n');
        }
        put(progressFile, text(rankDirs.toString()));
        mkdirs(progressDir);
        mkdirs("dataset");
        try {
            put("dataset/mount.json", ViewNode.file(JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(mount.info())));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e); // numbers, strings and lists only
        }
    }

    private void prototypeRank(int r, ShardBuffer[] files) {
        String dir = progressDir + "/" + rankName(r);
        mkdirs(dir);
        StringBuilder list = new StringBuilder();
        for (int f = 0; f < files.length; f++) {
            list.append(root).append(dir).append('/').append(shardName(f)).append('\n');
        }
        put(dir + "/list.txt", text(list.toString()));
        int batches = mount.partition.batches();
        put(dir + "/batch-sizes.txt", text(batches == 0 ? "" : mount.partition.localBatch(r) + " " + batches + "\n"));
        for (int f = 0; f < files.length; f++) {
            shardFile(dir + "/" + shardName(f), shardName(f), files[f]);
        }
    }

    /** A shard file with its {@code .idx} (offsets within the shard) and {@code .meta} (global ids). */
    private void shardFile(String path, String name, ShardBuffer b) {
        put(path, ViewNode.data(mount, b));
        StringBuilder idx = new StringBuilder("1\n./" + name + " " + b.ids.length + "\n");
        StringBuilder meta = new StringBuilder();
        for (int i = 0; i < b.ids.length; i++) {
            idx.append(b.offsets[i]).append(' ').append(b.offsets[i + 1]).append('\n');
            meta.append(b.ids[i]).append('\n');
        }
        put(path + ".idx", text(idx.toString()));
        put(path + ".meta", text(meta.toString()));
    }

    private void simpleRank(int r, ShardBuffer[] files) {
        String simple = "dataset/rank-" + r;
        mkdirs(simple);
        put(simple + "/samples", ViewNode.data(mount, files));
        int n = 0;
        for (ShardBuffer b : files) {
            n += b.ids.length;
        }
        ByteBuffer offsets = npy(n + 1).putLong(0);
        ByteBuffer ids = npy(n);
        long end = 0;
        for (ShardBuffer b : files) {
            for (int i = 0; i < b.ids.length; i++) {
                ids.putLong(b.ids[i]);
                offsets.putLong(end += b.length(i));
            }
        }
        put(simple + "/offsets.npy", ViewNode.file(offsets.array()));
        put(simple + "/ids.npy", ViewNode.file(ids.array()));
    }

    private void mkdirs(String path) {
        String parent = "";
        for (String part : path.split("/")) {
            String child = parent.isEmpty() ? part : parent + "/" + part;
            if (!nodes.containsKey(child)) {
                nodes.put(child, ViewNode.dir());
                nodes.get(parent).add(part);
            }
            parent = child;
        }
    }

    private void put(String path, ViewNode node) {
        int slash = path.lastIndexOf('/');
        String parent = slash < 0 ? "" : path.substring(0, slash);
        mkdirs(parent.isEmpty() ? "" : parent);
        nodes.get(parent).add(path.substring(slash + 1));
        nodes.put(path, node);
    }

    private static ViewNode text(String s) {
        return ViewNode.file(s.getBytes(StandardCharsets.UTF_8));
    }

    /** A 1-D int64 {@code .npy} of {@code count} values, its header written; the values go after it. */
    private static ByteBuffer npy(int count) {
        byte[] header = Npy.header(TensorMeta.of(DType.I64, count));
        return ByteBuffer.allocate(header.length + 8 * count).order(ByteOrder.LITTLE_ENDIAN).put(header);
    }
}
