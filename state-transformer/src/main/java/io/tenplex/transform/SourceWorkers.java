package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The workers a change reads from, numbered densely for the planners' arrays: every worker of an old
 * rank or of a partner copy, ascending ({@code ids}); each old rank's dense worker ({@code ofRank});
 * per old rank the other dense workers keeping a copy of its tree ({@code copies}, empty when there
 * are none); and the device number a copy is read from ({@code copySpare + rank}).
 */
record SourceWorkers(int[] ids, int[] ofRank, int[][] copies, int copySpare) {

    static SourceWorkers of(Ptc from, Map<Integer, List<Integer>> copies) {
        int[] ids = java.util.stream.IntStream.concat(from.devices().stream().mapToInt(Device::worker),
                copies.values().stream().flatMap(List::stream).mapToInt(Integer::intValue)).distinct().sorted().toArray();
        int[] ofRank = new int[from.worldSize()];
        for (int r = 0; r < ofRank.length; r++) {
            ofRank[r] = Arrays.binarySearch(ids, from.device(r).worker());
        }
        int[][] copyWorkers = new int[copies.isEmpty() ? 0 : from.worldSize()][];
        copies.forEach((rank, ws) -> copyWorkers[rank] = ws.stream().mapToInt(w -> Arrays.binarySearch(ids, w))
                .filter(w -> w != ofRank[rank]).toArray());
        int spare = from.devices().stream().mapToInt(Device::local).max().orElse(0) + 1;
        return new SourceWorkers(ids, ofRank, copyWorkers, spare);
    }

    /** The workers with bytes, by worker number. */
    static Map<Integer, Long> byWorker(int[] ids, long[] bytes) {
        Map<Integer, Long> out = new java.util.TreeMap<>();
        for (int w = 0; w < ids.length; w++) {
            if (bytes[w] > 0) {
                out.put(ids[w], bytes[w]);
            }
        }
        return Map.copyOf(out);
    }
}
