package io.tenplex.bench;

import io.tenplex.jobs.durable.BlockRepair;
import io.tenplex.jobs.durable.DurableTier;
import io.tenplex.jobs.durable.FlushStats;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * The durable tier's flush of one rank's state (16 f32 tensors of [2048, 2048] plus an odd-sized one,
 * 257 MiB) to a directory, in process: a full flush (nothing on disk yet), a differential flush after a
 * fine-tuning step where a quarter of the tensors changed (the rest frozen), and a differential flush
 * where every tensor changed. Each round starts on an empty directory; the flush includes its fsyncs.
 * Prints medians of bytes written and time, and the ratios to the full flush.
 *
 * <p>Usage: {@code java -XX:MaxDirectMemorySize=4g -cp bench/target/benchmarks.jar
 * io.tenplex.bench.DurableFlushBench [rounds] [directory]}
 */
public final class DurableFlushBench {
    private static final int TENSORS = 16;
    private static final TensorMeta LAYER = TensorMeta.of(DType.F32, 2048, 2048);
    private static final TensorMeta ODD = TensorMeta.of(DType.F32, 1000, 1000);
    private final SplittableRandom random = new SplittableRandom(7);

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        Path root = Path.of(args.length > 1 ? args[1] : "/tmp/tenplex-durable-bench");
        new DurableFlushBench().run(rounds, root);
    }

    private void run(int rounds, Path root) throws Exception {
        List<FlushStats> full = new ArrayList<>();
        List<FlushStats> quarter = new ArrayList<>();
        List<FlushStats> all = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            Path dir = root.resolve("round-" + r);
            delete(dir);
            try (TensorStore store = new TensorStore(new Allocator(3L << 30))) {
                Generations generations = new Generations(store);
                generations.tiers().setDefaults(new Tiers.Settings(0, 0, 0, 2));
                DurableTier tier = new DurableTier(dir, store, generations, Runnable::run, BlockRepair.NONE);
                generations.addListener(tier);
                change(store, TENSORS, true);
                full.add(seal(generations, tier, 10));
                change(store, TENSORS / 4, false);
                quarter.add(seal(generations, tier, 20));
                change(store, TENSORS, true);
                all.add(seal(generations, tier, 30));
            }
            delete(dir);
        }
        FlushStats f = median(full);
        report("full flush (nothing on disk)", full, f);
        report("differential, 1/4 of the tensors changed", quarter, f);
        report("differential, all tensors changed", all, f);
    }

    /** Replaces the first {@code n} layer tensors (and the odd one when {@code odd}) with new bytes. */
    private void change(TensorStore store, int n, boolean odd) {
        for (int i = 0; i < n; i++) {
            put(store, "layers/" + i + "/weight", LAYER);
        }
        if (odd) {
            put(store, "odd", ODD);
        }
    }

    private void put(TensorStore store, String name, TensorMeta meta) {
        long size = meta.byteSize();
        BlobWriter w = BlobWriter.allocate(store.allocator(), size, store.checksumBlock());
        byte[] chunk = new byte[1 << 20];
        for (long off = 0; off < size; off += chunk.length) {
            for (int i = 0; i < chunk.length; i += 8) {
                long v = random.nextLong();
                for (int k = 0; k < 8; k++) {
                    chunk[i + k] = (byte) (v >>> (8 * k));
                }
            }
            w.append(ByteBuffer.wrap(chunk, 0, (int) Math.min(chunk.length, size - off)));
        }
        store.putTensor(StorePath.parse("/job/bench/save/0/" + name), meta, w.take(), w.checksums(), true);
    }

    private static FlushStats seal(Generations g, DurableTier tier, long step) throws IOException {
        g.seal("bench", step, 0, 1, null);
        g.sealed("bench", step, List.of(0), 1, null); // completes: the tier flushes on this thread
        return tier.lastFlush("bench").filter(s -> s.step() == step).orElseThrow();
    }

    private static FlushStats median(List<FlushStats> runs) {
        List<FlushStats> byTime = runs.stream().sorted(Comparator.comparingLong(FlushStats::millis)).toList();
        return byTime.get(byTime.size() / 2);
    }

    private static void report(String name, List<FlushStats> runs, FlushStats full) {
        FlushStats m = median(runs);
        System.out.printf(Locale.ROOT, "%-44s logical %6.1f MiB  written %6.1f MiB (%.3f of full)  time %5d ms "
                + "(%.3f of full)  %.2f GB/s logical  runs(ms)=%s%n", name, m.logicalBytes() / 1048576.0,
                m.bytesWritten() / 1048576.0, m.bytesWritten() / (double) full.bytesWritten(), m.millis(),
                m.millis() / (double) full.millis(), m.logicalBytes() / (m.millis() * 1e6),
                Arrays.toString(runs.stream().mapToLong(FlushStats::millis).toArray()));
    }

    private static void delete(Path dir) throws IOException {
        if (Files.exists(dir)) {
            try (Stream<Path> s = Files.walk(dir)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }
}
