package io.tenplex.ptc.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * Elastic data parallelism: for random sequences of resizes (the data-parallel size changing every
 * few steps, including sizes that do not divide the global batch), what all ranks read step by step,
 * concatenated in rank order, equals the static run's global batches, and every sample is read
 * exactly once per epoch.
 */
class DataPartitionPropertiesTest {
    record Run(int samples, int globalBatch, int samplesPerFile, long seed, boolean shuffle, List<int[]> resizes) {}

    @Provide
    Arbitrary<Run> runs() {
        Arbitrary<int[]> resize = Combinators.combine(Arbitraries.integers().between(1, 5),
                Arbitraries.integers().between(1, 12)).as((steps, n) -> new int[] {steps, n});
        return Combinators.combine(Arbitraries.integers().between(1, 300), Arbitraries.integers().between(1, 24),
                Arbitraries.integers().between(1, 9), Arbitraries.longs(), Arbitraries.of(true, false),
                resize.list().ofMinSize(1).ofMaxSize(8)).as(Run::new);
    }

    @Property(tries = 300)
    void resizes_readEveryGlobalBatchInTheStaticOrder(@ForAll("runs") Run run) {
        int g = run.globalBatch();
        if (run.samples() < g) {
            return; // no complete batch: rejected, see DataPartitionTest
        }
        DataPartition stat = new DataPartition(run.samples(), new MountParams(0, g, 1, run.seed(), run.shuffle(), 4));
        List<Integer> expected = new ArrayList<>();
        for (int b = 0; b < stat.batches(); b++) {
            Arrays.stream(stat.globalBatch(b)).forEach(expected::add);
        }
        List<Integer> read = new ArrayList<>();
        int step = 0;
        for (int[] resize : run.resizes()) {
            if (step >= stat.batches()) {
                break;
            }
            int n = resize[1];
            DataPartition mounted = new DataPartition(run.samples(),
                    new MountParams((long) step * g, g, n, run.seed(), run.shuffle(), run.samplesPerFile()));
            assertEquals(stat.batches() - step, mounted.batches());
            int[][] perRank = new int[n][];
            for (int r = 0; r < n; r++) {
                perRank[r] = concatShards(mounted, r);
                assertEquals(mounted.localBatch(r) * mounted.batches(), perRank[r].length);
            }
            for (int s = 0; s < resize[0] && step < stat.batches(); s++, step++) {
                for (int r = 0; r < n; r++) {
                    int local = mounted.localBatch(r);
                    for (int i = s * local; i < (s + 1) * local; i++) {
                        read.add(perRank[r][i]);
                    }
                }
            }
        }
        assertEquals(expected.subList(0, read.size()), read);
        assertEquals(read.size(), read.stream().distinct().count(), "a sample was read twice");
    }

    /** What a loader sees: the rank's shard files, one after another. */
    private static int[] concatShards(DataPartition p, int rank) {
        int[] all = p.rankSamples(rank);
        int[] out = new int[all.length];
        int at = 0;
        for (int f = 0; f < p.shardFiles(rank); f++) {
            int[] shard = p.shardSamples(all, f);
            System.arraycopy(shard, 0, out, at, shard.length);
            at += shard.length;
        }
        assertEquals(all.length, at);
        assertArrayEquals(all, out);
        return out;
    }

    @Property(tries = 100)
    void order_isAPermutationThatDependsOnlyOnTheSeed(@ForAll @IntRange(min = 0, max = 2000) int n,
            @ForAll long seed) {
        int[] a = SampleOrder.of(n, seed, 0, true);
        int[] sorted = a.clone();
        Arrays.sort(sorted);
        for (int i = 0; i < n; i++) {
            assertEquals(i, sorted[i]);
        }
        assertArrayEquals(a, SampleOrder.of(n, seed, 0, true));
    }
}
