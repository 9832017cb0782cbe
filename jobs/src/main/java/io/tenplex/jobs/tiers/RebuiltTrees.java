package io.tenplex.jobs.tiers;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Where the ranks rebuilt from parity land in this daemon's replica tree ({@code replicas/<step>/}),
 * segment by segment as they are solved. Every segment is checked against the seal's CRC32C before
 * anything of it is written. Streamed, a tensor is put into {@code <rank>.streamed/} (a tree the
 * durable fallback never touches, {@link ParityFallback}), linked into {@code <rank>.incoming/}, and
 * only then added to the rank's list of streamed tensors ({@link JobLayout#streamedList}) that
 * readers poll: a listed tensor's path only ever holds checked bytes. A rank's tree is published
 * ({@code <rank>.incoming} moved to {@code <rank>}, its replica manifest written last) once its last
 * segment is in.
 */
final class RebuiltTrees {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final TensorStore store;
    private final JobLayout replicas;
    private final long step;
    private final boolean stream;
    private final Map<Integer, List<String>> streamed = new HashMap<>();

    /** @param stream whether tensors are put where readers can read them before their rank is published */
    RebuiltTrees(TensorStore store, String job, long step, boolean stream) {
        this.store = store;
        this.replicas = new JobLayout(job, JobLayout.replicasDir(step), "load");
        this.step = step;
        this.stream = stream;
    }

    /** Starts rank {@code m} afresh: an {@code .incoming} tree left from before is removed. */
    void begin(SealManifest m) {
        StorePath incoming = incoming(m.rank());
        deleteIfThere(store, incoming);
        store.mkdirs(incoming);
        streamed.put(m.rank(), new ArrayList<>());
    }

    /** Checks {@code bytes} (borrowed) against the seal, then writes segment {@code s} of its rank. */
    void segment(BlockLayout.Segment s, ByteBuffer bytes) throws IOException {
        StorePath to = StorePath.parse(incoming(s.rank()) + "/" + s.path());
        CRC32C c = new CRC32C();
        c.update(bytes.duplicate());
        SegmentReads.check(to, Crc32c.hex((int) c.getValue()), s.item().crc32c());
        if (!s.tensor()) {
            byte[] b = new byte[bytes.remaining()];
            bytes.duplicate().get(b);
            SmallFiles.put(store, to, b);
            return;
        }
        Shape shape = Shape.of(s.item().shape().stream().mapToLong(Long::longValue).toArray());
        Blob blob = store.allocator().allocate(s.item().size());
        BlockChecksums sums;
        try {
            blob.write(0, bytes.duplicate());
            sums = BlockChecksums.compute(blob, store.checksumBlock());
        } catch (RuntimeException e) {
            blob.release();
            throw e;
        }
        TensorMeta meta = new TensorMeta(DType.fromName(s.item().dtype()), shape);
        if (!stream) {
            store.putTensor(to, meta, blob, sums, true);
            return;
        }
        StorePath early = replicas.streamed(s.rank(), s.path());
        store.putTensor(early, meta, blob, sums, true);
        store.link(early, to, true);
        List<String> keys = streamed.get(s.rank());
        keys.add(s.path());
        store.mkdirs(replicas.source().child("manifests"));
        SmallFiles.put(store, replicas.streamedList(s.rank()), JSON.writeValueAsBytes(keys));
    }

    /** Publishes rank {@code m}'s tree: {@code .incoming} becomes the rank's tree, its manifest last. */
    void publish(SealManifest m) throws IOException {
        deleteIfThere(store, replicas.savedRank(m.rank()));
        store.move(incoming(m.rank()), replicas.savedRank(m.rank()));
        store.mkdirs(replicas.source().child("manifests"));
        SmallFiles.put(store, new JobLayout(replicas.job()).replicaManifest(step, m.rank()), JSON.writeValueAsBytes(m));
    }

    private StorePath incoming(int rank) {
        return replicas.source().child(rank + ".incoming");
    }

    /** Removes what streaming left of {@code ranks} of generation {@code step}: their streamed trees and lists. */
    static void dropStreamed(TensorStore store, String job, long step, Collection<Integer> ranks) {
        JobLayout replicas = new JobLayout(job, JobLayout.replicasDir(step), "load");
        for (int r : ranks) {
            deleteIfThere(store, replicas.streamedList(r));
            deleteIfThere(store, replicas.streamedRank(r));
        }
    }

    static void deleteIfThere(TensorStore store, StorePath p) {
        try {
            store.delete(p);
        } catch (StoreException e) {
            // not there
        }
    }
}
