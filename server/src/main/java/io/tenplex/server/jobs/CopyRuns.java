package io.tenplex.server.jobs;

import io.tenplex.server.control.CopyRun;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A change's partner copies (old rank to the workers keeping a complete copy of its tree) as runs of
 * the {@code ChangeSpec} message, and back, checked: a ring of copies on consecutive workers is two
 * runs at any size.
 */
final class CopyRuns {
    private CopyRuns() {
    }

    /**
     * Consecutive ranks copied on the same workers, as one run each; runs of as many ranks each copied
     * on the next workers (a ring of partner copies) folded into one that repeats.
     */
    static void encode(TreeMap<Integer, List<Integer>> copies, io.tenplex.server.control.ChangeSpec.Builder b) {
        List<CopyRun.Builder> runs = new ArrayList<>();
        CopyRun.Builder run = null;
        int next = -1;
        for (var e : copies.entrySet()) {
            if (run != null && e.getKey() == next && run.getWorkersList().equals(e.getValue())) {
                run.setCount(run.getCount() + 1);
            } else {
                run = CopyRun.newBuilder().setFirstRank(e.getKey()).setCount(1).addAllWorkers(e.getValue());
                runs.add(run);
            }
            next = e.getKey() + 1;
        }
        CopyRun.Builder folded = null;
        for (CopyRun.Builder r : runs) {
            if (folded != null && repeats(folded, r)) {
                folded.setRepeat(folded.getRepeat() + 1);
            } else {
                if (folded != null) {
                    b.addCopies(folded);
                }
                folded = r;
            }
        }
        if (folded != null) {
            b.addCopies(folded);
        }
    }

    /** Whether {@code r} is {@code run}'s next repetition: its next ranks, each copied on the next workers. */
    private static boolean repeats(CopyRun.Builder run, CopyRun.Builder r) {
        int j = run.getRepeat() + 1;
        if (r.getCount() != run.getCount() || r.getFirstRank() != run.getFirstRank() + j * run.getCount()
                || r.getWorkersCount() != run.getWorkersCount()) {
            return false;
        }
        for (int k = 0; k < r.getWorkersCount(); k++) {
            if (r.getWorkers(k) != run.getWorkers(k) + j) {
                return false;
            }
        }
        return true;
    }

    /** The runs of copies, checked: old ranks in increasing order, at most four copies a rank in all. */
    static Map<Integer, List<Integer>> decode(io.tenplex.server.control.ChangeSpec m, int oldRanks) {
        long entries = 0;
        long end = 0;
        Map<Integer, List<Integer>> out = new TreeMap<>();
        for (CopyRun r : m.getCopiesList()) {
            long first = r.getFirstRank();
            long ranks = (long) r.getCount() * (r.getRepeat() + 1L);
            entries += ranks * r.getWorkersCount();
            if (first < end || r.getCount() < 1 || r.getRepeat() < 0 || first + ranks > oldRanks
                    || entries > 4L * oldRanks) {
                throw new IllegalArgumentException("copies: ranks " + first + " to " + (first + ranks - 1)
                        + " are not old ranks after the previous run's, or more than " + 4 * oldRanks
                        + " copies are listed");
            }
            r.getWorkersList().forEach(w -> {
                ChangeSpecCodec.worker(w, "copy of rank " + first);
                ChangeSpecCodec.worker(w + r.getRepeat(), "copy of rank " + first + " repeated " + r.getRepeat() + " times");
            });
            for (int j = 0; j <= r.getRepeat(); j++) {
                int shift = j;
                List<Integer> ws = r.getWorkersList().stream().map(w -> w + shift).toList();
                for (long rank = first + (long) j * r.getCount(); rank < first + (j + 1L) * r.getCount(); rank++) {
                    out.put((int) rank, ws);
                }
            }
            end = first + ranks;
        }
        return out;
    }
}
