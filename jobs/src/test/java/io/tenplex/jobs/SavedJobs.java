package io.tenplex.jobs;


import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.transform.ReferenceInterpreter;
import java.util.List;
import java.util.Map;

/** Saves a job's shards into the stores of the workers that hold them, as training would. */
public final class SavedJobs {
    private SavedJobs() {
    }

    /** Random full tensors, sharded under {@code from} into {@code stores} (index = worker); returns the tensors. */
    public static Map<String, byte[]> save(List<TensorStore> stores, JobLayout paths, Ptc from, long seed) {
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(from, seed);
        var shards = ReferenceInterpreter.shard(from, full);
        for (int rank = 0; rank < from.worldSize(); rank++) {
            TensorStore store = stores.get(from.device(rank).worker());
            for (Ptc.Shard s : from.shards(rank)) {
                Fixtures.putTensor(store, paths.saved(rank, s.key()).toString(),
                        new TensorMeta(s.spec().dtype(), s.shape()), shards.get(rank).get(s.key()).data(), false);
            }
        }
        return full;
    }

    /** The bytes stored at {@code path}. */
    public static byte[] bytes(TensorStore store, String path) {
        try (io.tenplex.store.DataRef ref = store.open(io.tenplex.store.StorePath.parse(path))) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate((int) ref.size());
            ref.copyTo(0, ref.size(), b);
            return b.array();
        }
    }
}
