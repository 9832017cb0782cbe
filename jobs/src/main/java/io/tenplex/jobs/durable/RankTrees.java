package io.tenplex.jobs.durable;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.DataRef;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The rank trees of one generation that this daemon's store holds, opened for reading: the bytes stay
 * as they were when opened even if the generation is dropped meanwhile. Close to give them back.
 */
final class RankTrees implements AutoCloseable {
    /** One file or tensor of a rank tree, with its path inside the tree. */
    record Opened(String path, DataRef ref) {
    }

    private final Map<Integer, List<Opened>> ranks = new LinkedHashMap<>();

    private RankTrees() {
    }

    /**
     * Opens every entry of the ranks of {@code /job/<job>/generations/<step>/} here.
     *
     * @throws StoreException not found when the generation is not (or no longer) in the store
     */
    static RankTrees open(TensorStore store, String job, long step) {
        RankTrees t = new RankTrees();
        try {
            StorePath dir = new JobLayout(job).generation(step);
            for (Entry r : store.list(dir, false)) {
                if (r.type() == EntryType.DIR && numeric(r.name())) {
                    List<Opened> entries = new ArrayList<>();
                    t.ranks.put(Integer.parseInt(r.name()), entries); // closed with the rest should an open fail
                    openAll(store, r.path(), entries);
                }
            }
            return t;
        } catch (RuntimeException e) {
            t.close();
            throw e;
        }
    }

    private static void openAll(TensorStore store, StorePath root, List<Opened> out) {
        for (Entry e : store.walk(root, false)) {
            String rel = e.path().toString().substring(root.toString().length() + 1);
            out.add(new Opened(rel, store.open(e.path())));
        }
    }

    private static boolean numeric(String n) {
        return !n.isEmpty() && n.length() < 10 && n.chars().allMatch(Character::isDigit);
    }

    /** Rank to its entries, ranks ascending as listed. */
    Map<Integer, List<Opened>> ranks() {
        return ranks;
    }

    @Override
    public void close() {
        ranks.values().forEach(l -> l.forEach(o -> o.ref().close()));
        ranks.clear();
    }
}
