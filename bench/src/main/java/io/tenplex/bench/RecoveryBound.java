package io.tenplex.bench;

import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Region;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The network lower bound of a recovery, in bytes into one worker. Old rank r was on worker r. Each
 * survivor holds its own old rank in memory and, with partner copies (n = 1), a copy of the rank of
 * the worker before it; those bytes are free. Every byte of a survivor's new shards that it does not
 * hold must cross its downlink: {@code need(w)}, and the bound is the largest. With erasure-coded
 * groups (k = 3, m = 1: group {0, 1, 2}, its parity block on worker 3) a survivor holds only its own
 * rank, and the lost rank must first be rebuilt on some survivor {@code b}, which receives the parity
 * block (as long as the group's longest member block, unless {@code b} is worker 3) and the blocks of
 * the other surviving members (unless its own); after that {@code b} holds the lost rank too. The
 * bound is the best choice of {@code b}: {@code min_b max(rebuild(b) + need(b, with the lost rank),
 * max_{w != b} need(w))}. Tensor bytes only (the model's small values are left out); uplinks are not
 * counted, so the bound is optimistic. {@code from} and {@code to} must describe the models as the
 * daemon plans them (a Megatron model's tied head on the last stage: {@code MegatronLayout.asSaved}
 * and {@code forStages}); a tied head the old save lacks is filled from the word embeddings.
 */
record RecoveryBound(long bytes, String how) {
    static RecoveryBound of(Ptc from, Ptc to, int lost, boolean partners) {
        Map<Integer, Long> need = need(from, to, lost, partners, -1);
        long most = need.values().stream().mapToLong(Long::longValue).max().orElse(0);
        if (partners) {
            return new RecoveryBound(most, "received by worker " + worker(need, most) + "; per worker " + mib(need));
        }
        List<Integer> group = List.of(0, 1, 2);
        long parity = group.stream().mapToLong(m -> rankBytes(from, m)).max().orElse(0);
        long best = Long.MAX_VALUE;
        String how = "";
        for (int b : need.keySet()) {
            long rebuild = b == 3 ? 0 : parity;
            for (int m : group) {
                rebuild += m == lost || m == b ? 0 : rankBytes(from, m);
            }
            Map<Integer, Long> after = need(from, to, lost, false, b);
            long bound = after.values().stream().mapToLong(Long::longValue).max().orElse(0);
            bound = Math.max(bound, after.get(b) + rebuild);
            if (bound < best) {
                best = bound;
                how = "rebuilt on worker " + b + " (" + rebuild / 1048576 + " MiB of parity and members in), then "
                        + "per worker " + mib(after);
            }
        }
        return new RecoveryBound(best, how);
    }

    /** Per survivor, the bytes of its new shards it does not hold; {@code rebuilder} also holds the lost rank. */
    private static Map<Integer, Long> need(Ptc from, Ptc to, int lost, boolean partners, int rebuilder) {
        Map<Integer, Long> need = new TreeMap<>();
        for (int r = 0; r < to.worldSize(); r++) {
            int w = to.device(r).worker();
            Set<Integer> held = new HashSet<>(List.of(w));
            if (partners) {
                held.add(Math.floorMod(w - 1, from.worldSize()));
            }
            if (w == rebuilder) {
                held.add(lost);
            }
            need.merge(w, missing(from, to, to.shards(r), held), Long::sum);
        }
        return need;
    }

    private static long rankBytes(Ptc from, int rank) {
        return from.shards(rank).stream().mapToLong(Ptc.Shard::bytes).sum();
    }

    /** Bytes of {@code shards} not covered by the old ranks {@code held} (their shards partition each tensor). */
    private static long missing(Ptc from, Ptc to, List<Ptc.Shard> shards, Set<Integer> held) {
        long out = 0;
        for (Ptc.Shard s : shards) {
            Set<Region> local = new HashSet<>();
            String name = source(from, to, s.spec().name());
            for (int r : held) {
                for (Ptc.Shard o : from.shards(r)) {
                    if (o.spec().name().equals(name)) {
                        local.add(o.region());
                    }
                }
            }
            long covered = 0;
            for (Region g : local) {
                covered += s.region().intersect(g).map(Region::volume).orElse(0L);
            }
            long volume = s.region().volume();
            out += volume == 0 ? 0 : s.bytes() * (volume - covered) / volume;
        }
        return out;
    }

    /** The old tensor a new one is filled from: itself, or the original of a tied copy the old model lacks. */
    private static String source(Ptc from, Ptc to, String name) {
        String tie = to.model().tiedTo(name);
        return from.model().has(name) || tie == null ? name : tie;
    }

    private static int worker(Map<Integer, Long> need, long most) {
        return need.entrySet().stream().filter(e -> e.getValue() == most).findFirst().map(Map.Entry::getKey).orElse(-1);
    }

    private static String mib(Map<Integer, Long> need) {
        StringBuilder b = new StringBuilder();
        need.forEach((w, n) -> b.append(b.length() > 0 ? " " : "").append(w).append('=').append(n / 1048576)
                .append(" MiB"));
        return b.toString();
    }
}
