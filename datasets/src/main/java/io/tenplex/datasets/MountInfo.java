package io.tenplex.datasets;

import io.tenplex.store.JobNamespace;
import java.util.List;

/**
 * A mount's parameters and shape, as {@code dataset/mount.json} and the status show them.
 *
 * @param samples samples in the index
 * @param localBatch samples of each global batch that each of the {@code dpSize} ranks reads
 * @param ranks the ranks this daemon serves
 */
public record MountInfo(String job, long progress, int globalBatch, int dpSize, long seed, boolean shuffle,
        int samplesPerFile, int samples, int epoch, int batches, int dropped, List<Integer> localBatch,
        List<Integer> ranks) {
    public MountInfo {
        localBatch = List.copyOf(localBatch);
        ranks = List.copyOf(ranks);
    }

    /** The view's entry point, {@code /job/<job>/head.txt}. */
    public String head() {
        return JobNamespace.path(job, "head.txt").toString();
    }
}
