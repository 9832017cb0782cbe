package io.tenplex.bench;

import io.tenplex.server.RestServer;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Uploads against the physical limit, side by side in one run: our REST uploads (a daemon's store:
 * pooled memory, block checksums, every check) against a raw TCP receive of the same bytes into
 * preallocated memory (a plain socket, {@link RawReceiver}), alternating which goes first. Cases:
 * one 256 MiB tensor and 2,000 tensors of 4 KiB (one request each on a kept-alive connection; the raw
 * side answers each 4 KiB message with one byte, as the daemon answers each request), each fresh (the
 * tensors deleted before, untimed) and replacing; and the same 2,000 tensors in one tar batch
 * ({@code POST /upload}) against a raw receive of the same archive. Every round changes the bytes and
 * reads them back for comparison outside the timed part. Prints medians, ratios and the load average,
 * and, less sensitive to a busy machine, the receiving side's bytes per CPU-second (its threads' CPU
 * time, user and system, during the transfer: the daemon's event loops and work pool, or the raw
 * receiver's one thread). For the 256 MiB cases it also prints how many uploads took memory new to
 * the process rather than a recycled chunk.
 *
 * <p>Usage: {@code java -Xmx1g -XX:MaxDirectMemorySize=3g -cp bench/target/benchmarks.jar
 * io.tenplex.bench.UploadBench [rounds]}; {@code -Dcases=256} runs only the cases whose name contains "256",
 * {@code -Dreversed=true} runs them in the opposite order, {@code -Dwarmup=N} sets the untimed rounds,
 * {@code -Dsettle=S} waits up to S seconds after the untimed rounds for the kernel to collapse the
 * store's large chunks into transparent huge pages (as in a daemon that has run for some minutes;
 * {@code khugepaged} takes about 16 MiB every 10 s at its defaults), printing what it reached.
 */
public final class UploadBench {
    static final int BIG = 256 << 20;
    static final int SMALL = 4096;
    static final int COUNT = 2000;

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 7;
        ByteBuffer big = ByteBuffer.allocateDirect(BIG);
        ByteBuffer small = ByteBuffer.allocateDirect(SMALL * COUNT);
        Payloads.fill(big, 1);
        Payloads.fill(small, 2);
        byte[] tarBytes = Payloads.tar(small, SMALL, COUNT);
        ByteBuffer tar = ByteBuffer.allocateDirect(tarBytes.length);
        System.out.printf(Locale.ROOT, "load average before: %s%n", loadAverage());
        try (TensorStore store = new TensorStore(new Allocator(2L << 30));
                RawReceiver raw = new RawReceiver(BIG)) {
            RestServer rest = new RestServer(store, null);
            int port = rest.start("127.0.0.1", 0).getPort();
            try (HttpConn c = new HttpConn(port)) {
                NewMemory fresh = new NewMemory(store.allocator());
                NewMemory replacing = new NewMemory(store.allocator());
                List<Case> cases = List.of(
                        new Case("256 MiB, fresh", r -> {
                            c.delete("/api/v1/tensors/big");
                            Payloads.stamp(big, r);
                        }, fresh.watch(() -> c.putTensor("/api/v1/tensors/big", big, 0, BIG)),
                                () -> raw.receive(big, BIG, 1), r -> verifyBig(c, raw, big)),
                        new Case("256 MiB, replacing", r -> Payloads.stamp(big, r),
                                replacing.watch(() -> c.putTensor("/api/v1/tensors/big", big, 0, BIG)),
                                () -> raw.receive(big, BIG, 1), r -> verifyBig(c, raw, big)),
                        new Case("2000 x 4 KiB, fresh", r -> {
                            c.delete("/api/v1/dirs/small");
                            Payloads.stamp(small, r);
                        }, () -> putSmall(c, small), () -> raw.receive(small, SMALL, COUNT), r -> verifySmall(c, small)),
                        new Case("2000 x 4 KiB, replacing", r -> Payloads.stamp(small, r), () -> putSmall(c, small),
                                () -> raw.receive(small, SMALL, COUNT), r -> verifySmall(c, small)),
                        new Case("2000 x 4 KiB in one tar, fresh", r -> {
                            c.delete("/api/v1/dirs/small");
                            Payloads.stampTar(tarBytes, small, SMALL, COUNT, r);
                            tar.put(0, tarBytes);
                        }, () -> c.postTar("/small", tar), () -> raw.receive(tar, tar.capacity(), 1),
                                r -> verifySmall(c, small)));
                run(cases, rounds, () -> { // the daemon closes a connection idle for long
                    c.delete("/api/v1/tensors/settling");
                    return 0;
                });
                fresh.print("256 MiB, fresh");
                replacing.print("256 MiB, replacing");
            } finally {
                rest.close();
            }
        }
        System.out.printf(Locale.ROOT, "load average after: %s%n", loadAverage());
    }

    /**
     * Runs the cases whose names contain the system property {@code cases} (all by default), after
     * {@code warmup} (default 3) untimed rounds of each: on two cores the JIT compiling the daemon's
     * paths during the first case's timed rounds slowed that case alone (a 256 MiB case run first
     * measured about 0.75 of the raw receive, the same case run second 0.9-1.0).
     */
    static void run(List<Case> cases, int rounds, Transfer keepAlive) throws IOException {
        String only = System.getProperty("cases", "");
        List<Case> chosen = new ArrayList<>(cases.stream().filter(k -> k.name().contains(only)).toList());
        if (Boolean.getBoolean("reversed")) { // -Dreversed=true: the last case first
            java.util.Collections.reverse(chosen);
        }
        int warmup = Integer.getInteger("warmup", 3);
        for (Case k : chosen) {
            k.warmUp(warmup);
        }
        settle(Integer.getInteger("settle", 0), keepAlive);
        for (Case k : chosen) {
            k.run(rounds);
        }
    }

    /**
     * Waits up to {@code seconds} for this process's memory in transparent huge pages to stop
     * growing for 30 s (the store's chunks collapsed as far as they will), polling every second and
     * running {@code keepAlive} every 5 s.
     */
    static void settle(int seconds, Transfer keepAlive) throws IOException {
        if (seconds <= 0) {
            return;
        }
        long start = System.nanoTime();
        long deadline = start + seconds * 1_000_000_000L;
        long last = anonHugeMiB();
        long lastGrowth = start;
        while (System.nanoTime() < deadline && System.nanoTime() - lastGrowth < 30_000_000_000L) {
            try {
                Thread.sleep(1000); // polling the kernel's background collapse; nothing to wait on instead
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if ((System.nanoTime() - start) / 1_000_000_000L % 5 == 0) {
                keepAlive.run();
            }
            long now = anonHugeMiB();
            if (now > last) {
                last = now;
                lastGrowth = System.nanoTime();
            }
        }
        System.out.printf(Locale.ROOT, "settled %.0f s: %d MiB of this process in transparent huge pages%n",
                (System.nanoTime() - start) / 1e9, last);
    }

    /** This process's anonymous memory in transparent huge pages, in MiB. */
    static long anonHugeMiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/smaps_rollup"))) {
            if (line.startsWith("AnonHugePages:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) >> 10;
            }
        }
        return 0;
    }

    static long putSmall(HttpConn c, ByteBuffer all) throws IOException {
        for (int i = 0; i < COUNT; i++) {
            c.putTensor("/api/v1/tensors/small/t" + i, all, i * SMALL, SMALL);
        }
        return (long) SMALL * COUNT;
    }

    static void verifyBig(HttpConn c, RawReceiver raw, ByteBuffer big) throws IOException {
        c.verify("/api/v1/tensors/big", big, 0, BIG);
        if (raw.landing().slice(0, BIG).mismatch(big) >= 0) {
            throw new IllegalStateException("the raw receive landed other bytes than were sent");
        }
    }

    static void verifySmall(HttpConn c, ByteBuffer all) throws IOException {
        for (int i = 0; i < COUNT; i++) {
            c.verify("/api/v1/tensors/small/t" + i, all, i * SMALL, SMALL);
        }
    }

    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException e) {
            return "unknown";
        }
    }

    interface Step {
        void run(int round) throws IOException;
    }

    interface Transfer {
        long run() throws IOException;
    }

    /**
     * Counts the uploads that took memory new to the process rather than recycled chunks: those after
     * which the store's used plus pooled bytes grew by at least half the upload (a recycled chunk
     * moves from pooled to used; a replaced tensor's goes back to the pool).
     */
    static final class NewMemory {
        private final Allocator allocator;
        private int uploads;
        private int fresh;

        NewMemory(Allocator allocator) {
            this.allocator = allocator;
        }

        Transfer watch(Transfer upload) {
            return () -> {
                long held = allocator.usedBytes() + allocator.pooledBytes();
                long bytes = upload.run();
                uploads++;
                if (allocator.usedBytes() + allocator.pooledBytes() - held >= bytes / 2) {
                    fresh++;
                }
                return bytes;
            };
        }

        void print(String name) {
            if (uploads > 0) {
                System.out.printf(Locale.ROOT, "%-32s uploads into memory new to the process: %d of %d (warm-up "
                        + "included; the rest into recycled chunks)%n", name, fresh, uploads);
            }
        }
    }

    /** One measured case: untimed setup, ours and the raw receive alternately timed, untimed check. */
    record Case(String name, Step setup, Transfer ours, Transfer raw, Step verify) {
        /** Untimed rounds: setup, ours, the raw receive, check. */
        void warmUp(int rounds) throws IOException {
            for (int r = 0; r < rounds; r++) {
                setup.run(-1);
                ours.run();
                raw.run();
                verify.run(-1);
            }
        }

        void run(int rounds) throws IOException {
            warmUp(1);
            List<Double> a = new ArrayList<>();
            List<Double> b = new ArrayList<>();
            List<Double> ca = new ArrayList<>();
            List<Double> cb = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                setup.run(r);
                if (r % 2 == 0) {
                    measure(ours, "tenplex-", a, ca);
                    measure(raw, "raw-receive", b, cb);
                } else {
                    measure(raw, "raw-receive", b, cb);
                    measure(ours, "tenplex-", a, ca);
                }
                verify.run(r);
            }
            double ma = median(a);
            double mb = median(b);
            System.out.printf(Locale.ROOT, "%-32s ours %6.3f GB/s (%s)  raw TCP %6.3f GB/s (%s)  ratio %.2f  load %s%n",
                    name, ma, range(a), mb, range(b), ma / mb, loadAverage().split(" ")[0]);
            System.out.printf(Locale.ROOT, "%-32s receiving side's CPU: ours %6.3f GB per CPU-second, raw TCP %6.3f"
                    + "  ratio %.2f%n", "", median(ca), median(cb), median(ca) / median(cb));
        }
    }

    /**
     * Times a transfer: its rate (GB/s of wall time) into {@code rates}, and the bytes per CPU-second
     * of the receiving side's threads (those whose names start with {@code threads}) into {@code cpu}.
     */
    static void measure(Transfer t, String threads, List<Double> rates, List<Double> cpu) throws IOException {
        long cpu0 = cpuOf(threads);
        long start = System.nanoTime();
        long bytes = t.run();
        long wall = System.nanoTime() - start;
        long used = cpuOf(threads) - cpu0;
        rates.add(bytes / (wall / 1e9) / 1e9);
        cpu.add(bytes / (Math.max(1, used) / 1e9) / 1e9);
    }

    /** CPU nanoseconds used so far by the threads whose names start with {@code prefix}. */
    static long cpuOf(String prefix) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread th : Thread.getAllStackTraces().keySet()) {
            if (th.getName().startsWith(prefix)) {
                long c = mx.getThreadCpuTime(th.getId());
                sum += Math.max(0, c);
            }
        }
        return sum;
    }

    static double rate(Transfer t) throws IOException {
        long start = System.nanoTime();
        long bytes = t.run();
        return bytes / ((System.nanoTime() - start) / 1e9) / 1e9;
    }

    static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        s.sort(null);
        return s.get(s.size() / 2);
    }

    private static String range(List<Double> v) {
        return String.format(Locale.ROOT, "%.2f-%.2f", v.stream().mapToDouble(d -> d).min().orElse(0),
                v.stream().mapToDouble(d -> d).max().orElse(0));
    }

    /** The bytes as UTF-8, for heads. */
    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
