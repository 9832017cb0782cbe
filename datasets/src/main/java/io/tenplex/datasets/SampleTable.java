package io.tenplex.datasets;

import java.util.Arrays;

/**
 * Where each local sample of a mount lies, in primitive arrays (about 8 heap bytes per local
 * sample): a sample's <em>position</em> numbers the shard files of the local ranks one after another
 * (rank by rank, file by file, sample by sample); the ids are kept sorted with their positions for
 * lookup by id, and the loading order is computed from the position, never materialised. Immutable.
 */
final class SampleTable {
    private final ShardBuffer[] files; // every shard file of the local ranks, in position order
    private final int[] fileStart; // position of each file's first sample, plus the total at the end
    private final int[] sortedIds;
    private final int[] positions; // positions[k] holds sample sortedIds[k]
    private final int[] rankFile; // index in files of each local rank's first file
    private final int[] rankBatchStart; // offset of each local rank within one global batch, plus the total
    private final int samplesPerFile;
    private final long bytes;

    private SampleTable(ShardBuffer[][] byRank, int[] localBatch, int samplesPerFile) {
        this.samplesPerFile = samplesPerFile;
        this.files = Arrays.stream(byRank).flatMap(Arrays::stream).toArray(ShardBuffer[]::new);
        this.fileStart = new int[files.length + 1];
        long total = 0;
        long size = 0;
        for (int f = 0; f < files.length; f++) {
            total += files[f].ids.length;
            size += files[f].size();
            fileStart[f + 1] = Math.toIntExact(total); // local samples are distinct global ids: fewer than 2^31
        }
        this.bytes = size;
        this.rankFile = new int[byRank.length];
        this.rankBatchStart = new int[byRank.length + 1];
        for (int r = 0, f = 0; r < byRank.length; f += byRank[r].length, r++) {
            rankFile[r] = f;
            rankBatchStart[r + 1] = Math.addExact(rankBatchStart[r], localBatch[r]);
        }
        this.sortedIds = new int[fileStart[files.length]];
        this.positions = new int[sortedIds.length];
        sortById();
    }

    /**
     * @param byRank the shard files of each local rank, in the mount's rank order
     * @param localBatch the samples each local rank reads per global batch (0 without batches)
     */
    static SampleTable of(ShardBuffer[][] byRank, int[] localBatch, int samplesPerFile) {
        return new SampleTable(byRank, localBatch, samplesPerFile);
    }

    private void sortById() {
        long[] packed = new long[sortedIds.length]; // id in the high half, position in the low half
        for (int f = 0, p = 0; f < files.length; f++) {
            for (int i = 0; i < files[f].ids.length; i++, p++) {
                packed[p] = ((long) files[f].ids[i] << 32) | p;
            }
        }
        Arrays.sort(packed);
        for (int k = 0; k < packed.length; k++) {
            sortedIds[k] = (int) (packed[k] >>> 32);
            positions[k] = (int) packed[k];
        }
    }

    /** Number of local samples. */
    int size() {
        return sortedIds.length;
    }

    /** Bytes of all local samples. */
    long bytes() {
        return bytes;
    }

    /** Where sample {@code id} lies, or null if no local rank reads it. */
    SampleLoc find(int id) {
        int k = Arrays.binarySearch(sortedIds, id);
        return k < 0 ? null : at(positions[k]);
    }

    /**
     * True if sample {@code id} is local and among the first global batch's samples (the first
     * {@code localBatch} of each local rank, which {@link #loadAt} gives first).
     */
    boolean inFirstBatch(int id) {
        int k = Arrays.binarySearch(sortedIds, id);
        if (k < 0) {
            return false;
        }
        int p = positions[k];
        int r = rankFile.length - 1;
        while (r > 0 && fileStart[rankFile[r]] > p) {
            r--; // the last rank starting at or before p holds it: ranks without samples start where the next does
        }
        return p - fileStart[rankFile[r]] < rankBatchStart[r + 1] - rankBatchStart[r];
    }

    /** The sample at a position. */
    SampleLoc at(int position) {
        int f = Arrays.binarySearch(fileStart, position);
        f = f >= 0 ? f : -f - 2;
        while (files[f].ids.length == 0) {
            f++; // skip empty files (none are made today) to the one holding the position
        }
        return new SampleLoc(files[f], position - fileStart[f]);
    }

    /**
     * The {@code k}-th sample in loading order: the first global batch of every local rank, then
     * the second, and so on.
     */
    SampleLoc loadAt(int k) {
        int block = rankBatchStart[rankBatchStart.length - 1];
        int batch = k / block;
        int inBatch = k % block;
        int r = Arrays.binarySearch(rankBatchStart, inBatch);
        r = r >= 0 ? r : -r - 2;
        while (rankBatchStart[r + 1] == inBatch) {
            r++; // ranks without samples in a batch take no place in it
        }
        int local = rankBatchStart[r + 1] - rankBatchStart[r];
        long s = (long) batch * local + inBatch - rankBatchStart[r];
        return new SampleLoc(files[rankFile[r] + (int) (s / samplesPerFile)], (int) (s % samplesPerFile));
    }
}
