package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * {@link Plan#withPaths} binds each shard when it is read ({@link BoundShards}) and {@link Plan#shardsOf}
 * builds one worker's shards only; the shards are exactly those the eager binding it replaced made
 * (kept below as {@link #legacyBind}), worker by worker, on a mid-size Megatron change where some
 * replicas did not store a key (pieces move to another replica).
 */
class BoundShardsTest {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(8, 256, 8, 1000, 16);
    /** Ranks 1 and 5 (mod 8) saved no weights: their pieces are read from another replica. */
    private static final BiFunction<Integer, String, String> SOURCE = (rank, key) -> rank % 4 == 1 && key.contains(
            "weight") ? null : "saved/" + key;
    private static final Function<ShardPlan, String> DEST = s -> "load/" + s.destRank() + "/" + s.key();

    private static Plan plan(ParallelConfig a, ParallelConfig b, int perWorker) {
        return Planner.plan(Ptc.packed(MegatronLayout.model(GPT, a.pp()), a, perWorker),
                Ptc.packed(MegatronLayout.model(GPT, b.pp()), b, perWorker));
    }

    @Test
    void shardsOfEachWorker_areThoseOfTheEagerBinding() {
        ParallelConfig[][] pairs = {
            {ParallelConfig.of(2, 2, 4), ParallelConfig.of(2, 1, 8)},
            {ParallelConfig.of(2, 2, 4), ParallelConfig.of(4, 2, 2)},
            {ParallelConfig.of(2, 2, 8), ParallelConfig.of(2, 4, 4)},
        };
        for (ParallelConfig[] p : pairs) {
            for (int perWorker : new int[] {1, 4, 8}) {
                Plan plan = plan(p[0], p[1], perWorker);
                List<ShardPlan> eager = legacyBind(plan, SOURCE, DEST);
                Plan bound = plan.withPaths(SOURCE, DEST, plan.values());
                same(eager, bound.shards());
                long moved = 0;
                for (int w : bound.destWorkers()) {
                    List<ShardPlan> want = eager.stream().filter(s -> s.destDevice().worker() == w).toList();
                    same(want, bound.shardsOf(w));
                    assertEquals(want.stream().mapToLong(s -> s.pieces().size()).sum(), bound.pieceCountOf(w));
                    moved += want.stream().flatMap(s -> s.pieces().stream()).filter(x -> x.sourceRank() % 4 == 3
                            && x.sourceKey().contains("weight")).count();
                }
                assertTrue(moved > 0, "some pieces are read from another replica");
                assertEquals(plan.values(), bound.values());
                assertEquals(plan.destWorkers(), bound.destWorkers());
                assertEquals(plan.pieceCount(), bound.pieceCount());
            }
        }
    }

    @Test
    void aShardIsBoundWhenRead_andOneWorkersShardsOnlyWhenItsPartIsBuilt() {
        Plan plan = plan(ParallelConfig.of(2, 2, 4), ParallelConfig.of(2, 1, 8), 4);
        AtomicLong calls = new AtomicLong();
        Plan bound = plan.withPaths(SOURCE, s -> {
            calls.incrementAndGet();
            return DEST.apply(s);
        }, plan.values());
        assertEquals(plan.shards().size(), calls.get(), "every shard is checked once when bound");
        calls.set(0);
        List<ShardPlan> part = new ArrayList<>(bound.shardsOf(1));
        assertEquals(part.size(), calls.get());
        assertTrue(part.size() < plan.shards().size() / 2, part.size() + " of " + plan.shards().size());
    }

    /** A part's plan keeps its shards once bound: the same shards, never bound again when read. */
    @Test
    void keptShards_areTheSame_andNotBoundAgain() {
        Plan plan = plan(ParallelConfig.of(2, 2, 4), ParallelConfig.of(2, 1, 8), 4);
        AtomicLong calls = new AtomicLong();
        Plan kept = plan.withPaths(SOURCE, s -> {
            calls.incrementAndGet();
            return DEST.apply(s);
        }, plan.values(), true);
        assertEquals(plan.shards().size(), calls.get(), "every shard is bound once");
        same(legacyBind(plan, SOURCE, DEST), kept.shards());
        for (int w : kept.destWorkers()) {
            same(plan.withPaths(SOURCE, DEST, plan.values()).shardsOf(w), kept.shardsOf(w));
        }
        assertEquals(plan.shards().size(), calls.get(), "read again: not bound again");
        assertTrue(kept.isBound());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> plan.withPaths(
                (rank, key) -> key.endsWith("final_layernorm.bias") ? null : key, DEST, plan.values(), true));
        assertTrue(e.getMessage().contains("final_layernorm.bias (needed by rank"), e.getMessage());
    }

    @Test
    void aPieceNoHolderStores_failsWhenBound_notWhenRead() {
        Plan plan = plan(ParallelConfig.of(2, 2, 4), ParallelConfig.of(2, 1, 8), 4);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> plan.withPaths(
                (rank, key) -> key.endsWith("final_layernorm.bias") ? null : key, DEST, plan.values()));
        assertTrue(e.getMessage().contains("final_layernorm.bias (needed by rank"), e.getMessage());
    }

    static void same(List<ShardPlan> want, List<ShardPlan> got) {
        assertEquals(want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            assertEquals(describe(want.get(i)), describe(got.get(i)), "shard " + i);
        }
    }

    /** Everything a shard says, arrays included. */
    static String describe(ShardPlan s) {
        StringBuilder b = new StringBuilder().append(s.destRank()).append(' ').append(s.destDevice()).append(' ')
                .append(s.tensor()).append(' ').append(s.key()).append(' ').append(s.shape()).append(' ')
                .append(s.dtype()).append(' ').append(s.padding());
        for (Piece p : s.pieces()) {
            b.append("\n  ").append(p).append(' ').append(p.kind()).append(' ').append(p.sourceRank()).append(' ')
                    .append(p.sourceDevice()).append(' ').append(p.sourceKey()).append(' ').append(p.source()).append(' ')
                    .append(p.global()).append(' ').append(Arrays.toString(p.destOffset())).append(' ')
                    .append(p.bytes()).append(' ').append(Arrays.toString(p.replicas()));
        }
        return b.toString();
    }

    /** The eager binding {@link Plan#withPaths} did before it bound shards when read: every shard at once. */
    static List<ShardPlan> legacyBind(Plan plan, BiFunction<Integer, String, String> sourcePath,
            Function<ShardPlan, String> destPath) {
        List<ShardPlan> out = new ArrayList<>(plan.shards().size());
        for (ShardPlan s : plan.shards()) {
            List<Piece> pieces = new ArrayList<>(s.pieces().size());
            for (Piece p : s.pieces()) {
                List<Integer> holders = new ArrayList<>();
                String path = null;
                for (int r : candidates(p)) {
                    String at = sourcePath.apply(r, p.sourceKey());
                    if (at == null) {
                        continue;
                    }
                    if (path != null && !path.equals(at)) {
                        throw new IllegalArgumentException("ranks " + holders.get(0) + " and " + r + " store "
                                + p.sourceKey() + " under different paths: " + path + ", " + at);
                    }
                    path = at;
                    holders.add(r);
                }
                if (path == null) {
                    throw new IllegalArgumentException("no rank of " + Arrays.toString(candidates(p)) + " saved "
                            + p.sourceKey() + " (needed by rank " + s.destRank() + ")");
                }
                int rank = holders.get(0);
                Device d = rank == p.sourceRank() && p.sourceDevice() != null ? p.sourceDevice() : plan.sourceDevice(rank);
                Piece.Kind kind = rank == p.sourceRank() ? p.kind()
                        : d.equals(s.destDevice()) ? Piece.Kind.SPLIT
                                : d.worker() == s.destDevice().worker() ? Piece.Kind.LOCAL : Piece.Kind.REMOTE;
                pieces.add(new Piece(kind, rank, d, path, p.source(), p.global(), p.destOffset(), p.bytes(),
                        holders.stream().sorted().mapToInt(Integer::intValue).toArray()));
            }
            out.add(new ShardPlan(s.destRank(), s.destDevice(), s.tensor(), destPath.apply(s), s.shape(), s.dtype(),
                    pieces, s.padding()));
        }
        return out;
    }

    private static int[] candidates(Piece p) {
        int[] r = p.replicas();
        int[] out = new int[r.length + 1];
        out[0] = p.sourceRank();
        int n = 1;
        for (int x : r) {
            if (x != p.sourceRank()) {
                out[n++] = x;
            }
        }
        return Arrays.copyOf(out, n);
    }
}
