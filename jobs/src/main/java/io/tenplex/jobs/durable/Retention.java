package io.tenplex.jobs.durable;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.NavigableSet;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which files of a job's durable directory stay: the manifests of the newest {@code keep} complete
 * generations, and every pack one of them refers to. Older manifests are removed first (the
 * generation stops being one), then the directories whose pack nothing refers to. A directory without
 * a manifest (a flush cut short, or an expired generation) is never restored; it is removed here
 * unless a kept manifest still refers to its pack.
 */
final class Retention {
    private Retention() {
    }

    /**
     * Applies the policy to {@code job}'s directory.
     *
     * @param keep complete generations to keep (at least 1)
     * @param skip a step being written now (left alone), or -1
     * @return the steps still complete, oldest first
     */
    static NavigableSet<Long> apply(DurableDir dir, String job, int keep, long skip) throws IOException {
        TreeSet<Long> all = dir.steps(job);
        TreeSet<Long> complete = new TreeSet<>();
        for (long s : all) {
            if (s != skip && dir.complete(job, s)) {
                complete.add(s);
            }
        }
        TreeSet<Long> kept = new TreeSet<>();
        complete.descendingSet().stream().limit(Math.max(1, keep)).forEach(kept::add);
        Set<String> referenced = new HashSet<>();
        boolean unsure = false;
        for (long s : kept) {
            try {
                dir.read(job, s).ifPresent(m -> m.ranks().values().forEach(items -> referencedBy(items, referenced)));
            } catch (IOException | RuntimeException e) {
                unsure = true; // an unreadable manifest: its packs are unknown, so no pack is removed now
            }
        }
        for (long s : complete) {
            if (!kept.contains(s)) {
                dir.deleteManifest(job, s);
            }
        }
        for (long s : all) {
            if (!unsure && s != skip && !kept.contains(s) && !referenced.contains(DurableDir.packName(s))) {
                dir.deleteGeneration(job, s);
            }
        }
        return kept;
    }

    private static void referencedBy(List<DurableManifest.Item> items, Set<String> out) {
        items.forEach(i -> i.blocks().forEach(b -> out.add(b.pack())));
    }
}
