package io.tenplex.server.jobs;

import java.util.ArrayList;
import java.util.List;

/**
 * Which saved layout each old rank of a change has (an index into the change's distinct layouts, -1:
 * none), as the {@code ChangeSpec} message carries it: the smallest period of the list (the
 * data-parallel replicas of a packed job saved alike), and that period as a list or as runs (a
 * pipeline's stages, when ranks are numbered stage by stage); checked before anything is expanded.
 */
final class RankLayouts {
    private RankLayouts() {
    }

    /** The layout index of every old rank, as the smallest period of them and that period as a list or runs. */
    static void encode(List<Integer> rankLayouts, io.tenplex.server.control.ChangeSpec.Builder b) {
        int period = period(rankLayouts);
        List<Integer> listed = rankLayouts.subList(0, period);
        List<Integer> runs = runs(listed);
        if (runs.size() < listed.size()) {
            b.addAllRankLayoutRuns(runs);
        } else {
            b.addAllRankLayouts(listed);
        }
        if (period < rankLayouts.size()) {
            b.setLayoutPeriod(period);
        }
    }

    /** The smallest p dividing the list's size with every element equal to the one p before it. */
    private static int period(List<Integer> l) {
        int n = l.size();
        for (int p = 1; p < n; p++) {
            if (n % p == 0 && periodic(l, p)) {
                return p;
            }
        }
        return n;
    }

    /** The list as (value, count) pairs of its runs of equal values. */
    private static List<Integer> runs(List<Integer> l) {
        List<Integer> out = new ArrayList<>();
        int i = 0;
        while (i < l.size()) {
            int j = i + 1;
            while (j < l.size() && l.get(j).equals(l.get(i))) {
                j++;
            }
            out.add(l.get(i));
            out.add(j - i);
            i = j;
        }
        return out;
    }

    private static boolean periodic(List<Integer> l, int p) {
        for (int i = p; i < l.size(); i++) {
            if (!l.get(i).equals(l.get(i - p))) {
                return false;
            }
        }
        return true;
    }

    /**
     * A layout per old rank (or none), each naming one of at most as many distinct layouts as ranks: the
     * list, or its first period of ranks repeated.
     */
    static List<Integer> decode(io.tenplex.server.control.ChangeSpec m, int oldRanks) {
        int period = m.getLayoutPeriod();
        if (period < 0 || (period > 0 && (period >= oldRanks || oldRanks % period != 0))) {
            throw new IllegalArgumentException("layouts: a period of " + period + " ranks does not divide the " + oldRanks
                    + " old ranks");
        }
        int listed = period > 0 ? period : oldRanks;
        List<Integer> first = listedLayouts(m, listed);
        if (first.size() != listed || m.getLayoutDigestsCount() > oldRanks) {
            throw new IllegalArgumentException("layouts: " + first.size() + " ranks' layouts and "
                    + m.getLayoutDigestsCount() + " distinct ones for " + oldRanks + " old ranks"
                    + (period > 0 ? " (a period of " + period + ")" : ""));
        }
        m.getLayoutDigestsList().forEach(d -> ChangeSpecCodec.digest(d, "layout digest"));
        if (new java.util.HashSet<>(m.getLayoutDigestsList()).size() != m.getLayoutDigestsCount()) {
            throw new IllegalArgumentException("layouts: a layout digest is listed twice");
        }
        for (int i : first) {
            if (i < -1 || i >= m.getLayoutDigestsCount()) {
                throw new IllegalArgumentException("layouts: index " + i + " names none of the "
                        + m.getLayoutDigestsCount() + " layouts");
            }
        }
        List<Integer> byRank = new ArrayList<>(oldRanks);
        for (int r = 0; r < oldRanks; r++) {
            byRank.add(first.get(r % listed));
        }
        return byRank;
    }

    /**
     * The layouts of the first {@code listed} old ranks as listed, or as runs (their counts checked
     * before any is expanded; a list of another length is answered for the caller to refuse).
     */
    private static List<Integer> listedLayouts(io.tenplex.server.control.ChangeSpec m, int listed) {
        if (m.getRankLayoutRunsCount() == 0) {
            return m.getRankLayoutsList();
        }
        long total = 0;
        for (int k = 1; k < m.getRankLayoutRunsCount(); k += 2) {
            total += m.getRankLayoutRuns(k);
            if (m.getRankLayoutRuns(k) < 1) {
                total = Long.MAX_VALUE;
                break;
            }
        }
        if (m.getRankLayoutsCount() > 0 || m.getRankLayoutRunsCount() % 2 != 0 || total != listed) {
            throw new IllegalArgumentException("layouts: the runs of ranks' layouts must be (index, count) pairs, each "
                    + "count at least 1, covering the " + listed + " ranks listed, in place of a list");
        }
        List<Integer> out = new ArrayList<>(listed);
        for (int k = 0; k < m.getRankLayoutRunsCount(); k += 2) {
            for (int i = 0; i < m.getRankLayoutRuns(k + 1); i++) {
                out.add(m.getRankLayoutRuns(k));
            }
        }
        return out;
    }
}
