package io.tenplex.datasets;

import io.tenplex.ptc.data.MountParams;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The limits of a mount request, checked before anything is allocated for it; every refusal is an
 * {@link IllegalArgumentException} (a 400) that names the value and the limit.
 */
public final class MountChecks {
    /** The largest data-parallel size a mount may have (the view has a directory per rank). */
    public static final int MAX_DP_SIZE = 1 << 16;

    private MountChecks() {}

    /** Refuses a data-parallel size over {@link #MAX_DP_SIZE}. */
    public static void checkDpSize(int dpSize) {
        if (dpSize > MAX_DP_SIZE) {
            throw new IllegalArgumentException("data-parallel size " + dpSize + " is over the limit " + MAX_DP_SIZE);
        }
    }

    /** Mount parameters, the data-parallel size checked against {@link #MAX_DP_SIZE} first. */
    public static MountParams params(long progress, int globalBatch, int dpSize, long seed, boolean shuffle,
            int samplesPerFile) {
        checkDpSize(dpSize);
        try {
            return new MountParams(progress, globalBatch, dpSize, seed, shuffle, samplesPerFile);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bad mount parameters: " + e.getMessage());
        }
    }

    /** Ranks {@code 0..dp-1}. */
    static List<Integer> allRanks(int dp) {
        List<Integer> all = new ArrayList<>(dp);
        for (int r = 0; r < dp; r++) {
            all.add(r);
        }
        return all;
    }

    /** {@code ranks}, each below {@code dp} and named once. */
    static List<Integer> distinctRanks(List<Integer> ranks, int dp) {
        Set<Integer> seen = new LinkedHashSet<>();
        for (Integer r : ranks) {
            if (r == null || r < 0 || r >= dp) {
                throw new IllegalArgumentException("rank " + r + " outside the data-parallel size " + dp
                        + " (expected: 0 <= rank < " + dp + ")");
            }
            if (!seen.add(r)) {
                throw new IllegalArgumentException("rank " + r + " appears more than once in 'ranks'");
            }
        }
        return List.copyOf(seen);
    }
}
