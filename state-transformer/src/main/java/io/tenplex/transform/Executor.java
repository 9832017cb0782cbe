package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Region;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Phaser;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.zip.CRC32C;

/**
 * Executes a plan against ports: for every destination shard it selects, it opens a buffer in the
 * {@link ShardSink}, reads each piece from the {@link ShardSource} (many pieces in flight, bounded),
 * verifies the CRC32C the holder vouches for, and writes the piece into place. A source that asked for a
 * checksum and got none reports a {@link CorruptTransferException}, handled like a mismatch. Pieces are queued per
 * source worker and each queue is drained by at most {@code maxInFlight} concurrent reads, so the
 * pool should have that many threads per source worker. A piece whose
 * destination bytes are contiguous is read straight into the destination buffer. A failed read or a
 * checksum mismatch is retried on the next replica; when every replica fails, execution fails and no
 * further shard is completed. Kept shards are aliased, not copied. Given a rate per source worker
 * (see the scheduler's flow rates), that worker's pieces are read one at a time and each read asks
 * its holder to send no faster than the rate.
 */
public final class Executor {
    private final ShardSource source;
    private final ExecutorService pool;
    private final int maxInFlight;
    private final Map<Integer, Long> rates;
    /** Old ranks whose pieces are read after every other piece of their flow (not ready yet: being rebuilt). */
    private final Set<Integer> late;
    /**
     * A paced flow is read one piece at a time, capped at its rate times this: the kernel's cap counts
     * TCP/IP headers (about 4% of a 1500-byte packet). Measured on links shaped with tc, one read at
     * rate x 1.04 kept the busiest links at their full rate; two reads at half the rate each fell
     * 13% short, and reads capped 15% above their share crowded the flows that cross two busy links.
     */
    static final double PACE_HEADROOM = 1.04;
    /** How often a wait for the lanes checks that the pool still runs them. */
    private static final long LANE_CHECK_MILLIS = 200;
    /** Why the run was stopped from outside ({@link #cancel}), or null. */
    private volatile String cancelled;

    /** @param pool runs the reads; {@code maxInFlight} bounds how many are outstanding per source worker */
    public Executor(ShardSource source, ExecutorService pool, int maxInFlight) {
        this(source, pool, maxInFlight, Map.of());
    }

    /**
     * @param rates bytes/s at which to read from each source worker, asked of the holder as a cap on
     *     its sending rate (a paced flow is read one piece at a time); workers not named are read
     *     unpaced, with up to {@code maxInFlight} concurrent reads
     */
    public Executor(ShardSource source, ExecutorService pool, int maxInFlight, Map<Integer, Long> rates) {
        this(source, pool, maxInFlight, rates, Set.of());
    }

    /**
     * @param late old ranks whose pieces each flow reads after all its other pieces: ranks the source
     *     makes wait (a lost worker's rank still being rebuilt), so the pieces that can be read at
     *     once are not queued behind them; their pieces are read unpaced
     */
    public Executor(ShardSource source, ExecutorService pool, int maxInFlight, Map<Integer, Long> rates,
            Set<Integer> late) {
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight must be >= 1");
        }
        this.source = source;
        this.pool = pool;
        this.maxInFlight = maxInFlight;
        this.rates = Map.copyOf(rates);
        this.late = Set.copyOf(late);
    }

    /** Counters of one run. */
    private static final class Tally {
        final AtomicLong local = new AtomicLong();
        final AtomicLong remote = new AtomicLong();
        final AtomicInteger retries = new AtomicInteger();
        final AtomicInteger corrupted = new AtomicInteger();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
    }

    /**
     * Assembles the shards of {@code plan} that {@code mine} selects (e.g. those whose destination
     * device is on this worker).
     *
     * @throws ExecutionFailedException when some piece could not be read from any replica
     */
    public ExecutionReport run(Plan plan, Predicate<ShardPlan> mine, ShardSink sink)
            throws ExecutionFailedException, InterruptedException {
        return run(plan.shards().stream().filter(mine).toList(), plan::sourceDevice, sink, new AtomicLong(), -1);
    }

    /**
     * Stops the run: its lanes take no further piece (the pieces being read end first), and the run
     * fails naming {@code why}. For a part aborted while it moves, whose bytes no one will read.
     */
    public void cancel(String why) {
        cancelled = why;
    }

    /**
     * Assembles the given destination shards (one worker's part of a plan).
     *
     * @param sourceDevice the device of every old rank
     * @param progress advanced by the bytes of every piece written or kept
     * @param worker the worker running this part (bytes from it count as local), or -1 for each
     *     shard's destination worker
     */
    public ExecutionReport run(List<ShardPlan> part, java.util.function.IntFunction<Device> sourceDevice, ShardSink sink,
            AtomicLong progress, int worker) throws ExecutionFailedException, InterruptedException {
        long t0 = System.nanoTime();
        Tally tally = new Tally();
        // One queue of pieces per source worker, each drained by up to maxInFlight lanes: every flow
        // into this worker gets the same number of connections whatever the order of the shards, so a
        // source shared with other destinations is not monopolised by the one whose pieces come first.
        Map<Integer, Flow> bySource = new LinkedHashMap<>();
        List<ShardPlan[]> aliases = new java.util.ArrayList<>();
        int kept = queue(part, sourceDevice, sink, progress, bySource, aliases);
        Phaser lanes = new Phaser(1);
        for (Map.Entry<Integer, Flow> flow : bySource.entrySet()) {
            Flow queue = flow.getValue();
            long flowRate = flow.getKey() == worker ? 0 : rates.getOrDefault(flow.getKey(), 0L);
            int concurrent = Math.min(flowRate > 0 ? 1 : maxInFlight, queue.size());
            long pace = flowRate == 0 ? 0 : Math.max(1, (long) (flowRate * PACE_HEADROOM));
            for (int i = concurrent; i > 0 && tally.failure.get() == null; i--) {
                lanes.register();
                try {
                    pool.execute(() -> drain(queue, new Lane(sourceDevice, sink, progress, tally, worker, pace), lanes));
                } catch (java.util.concurrent.RejectedExecutionException e) { // the pool is shutting down
                    lanes.arriveAndDeregister();
                    tally.failure.compareAndSet(null, e); // the run fails once the lanes already started end
                }
            }
        }
        awaitLanes(lanes, tally, pool);
        long aliasedBytes = 0;
        long aliasedRemote = 0;
        if (tally.failure.get() == null) {
            for (ShardPlan[] a : aliases) { // the first of each content is complete now
                sink.alias(a[0].destRank(), a[0].key(), a[1].destRank(), a[1].key());
                progress.addAndGet(a[0].byteSize());
                aliasedBytes += a[0].byteSize();
                int here = worker >= 0 ? worker : a[0].destDevice().worker();
                for (Piece p : a[0].pieces()) {
                    aliasedRemote += first(p, sourceDevice).worker() == here ? 0 : p.bytes();
                }
            }
        }
        ExecutionReport report = new ExecutionReport(part.size(), kept, tally.local.get(), tally.remote.get(),
                tally.retries.get(), tally.corrupted.get(), System.nanoTime() - t0, aliases.size(), aliasedBytes,
                aliasedRemote);
        Throwable f = tally.failure.get();
        if (f != null) { // the report goes with the failure: a failed part still tells its retries and corruptions
            throw new ExecutionFailedException(f instanceof ExecutionFailedException ? f.getMessage()
                    : "execution failed: " + f, f instanceof ExecutionFailedException ? f.getCause() : f, report);
        }
        return report;
    }

    /**
     * Waits until every lane has ended, also when interrupted: the lanes write into the sink's
     * buffers, which a failed run releases, so the run must not end while one still writes. An
     * interrupt fails the run (lanes take no further pieces) and is kept for the caller. Once the pool
     * has terminated, no lane writes any more and none will start (a {@code shutdownNow} drops those
     * queued): the wait ends then, failed, rather than waiting for lanes that never run.
     */
    private static void awaitLanes(Phaser lanes, Tally tally, ExecutorService pool) {
        int phase = lanes.arrive();
        boolean interrupted = false;
        while (true) {
            try {
                lanes.awaitAdvanceInterruptibly(phase, LANE_CHECK_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
                break;
            } catch (InterruptedException e) {
                interrupted = true;
                tally.failure.compareAndSet(null, e);
            } catch (java.util.concurrent.TimeoutException e) {
                if (pool.isTerminated()) {
                    tally.failure.compareAndSet(null, new java.util.concurrent.RejectedExecutionException(
                            "the read pool was shut down with lanes of this run not run"));
                    break;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Keeps shards kept in place, opens the others and queues their pieces by source worker, the
     * pieces of {@code late} ranks after the others of each flow, taken as they become readable
     * ({@link LateQueue}); answers how many were kept.
     */
    private int queue(List<ShardPlan> part, java.util.function.IntFunction<Device> sourceDevice, ShardSink sink,
            AtomicLong progress, Map<Integer, Flow> bySource, List<ShardPlan[]> aliases) {
        int kept = 0;
        List<ShardPlan> opened = new java.util.ArrayList<>();
        for (ShardPlan shard : PartShards.classify(part, sink.aliases(), aliases, opened)) {
            Piece p = shard.pieces().get(0);
            sink.keep(shard.destRank(), shard.key(), p.sourceRank(), p.sourceKey());
            progress.addAndGet(p.bytes());
            kept++;
        }
        sink.expect(opened.stream().mapToLong(ShardPlan::byteSize).toArray());
        for (ShardPlan shard : opened) {
            long covered = shard.pieces().stream().mapToLong(Piece::bytes).sum();
            ByteBuffer buf = sink.open(shard.destRank(), shard.key(), shard.shape(), shard.dtype(),
                    shard.padding().isEmpty() && covered == shard.byteSize());
            if (shard.pieces().isEmpty()) {
                sink.complete(shard.destRank(), shard.key()); // all padding
                continue;
            }
            AtomicInteger left = new AtomicInteger(shard.pieces().size());
            for (Piece piece : shard.pieces()) {
                int from = first(piece, sourceDevice).worker();
                Flow q = bySource.computeIfAbsent(from, w -> new Flow(new ConcurrentLinkedQueue<>(),
                        new LateQueue<>(t -> source.readable(t.piece.sourceRank(), t.piece.sourceKey()))));
                Task t = new Task(shard, piece, buf, left);
                if (late.contains(piece.sourceRank())) {
                    q.later().add(t);
                } else {
                    q.now().add(t);
                }
            }
        }
        return kept;
    }

    /**
     * The sizes of the new shards a run of {@code part} assembles, in the order it opens them, when its
     * sink aliases replicas (what it will {@link ShardSink#expect}): for taking their memory ahead of the run.
     */
    public static long[] newShardSizes(List<ShardPlan> part) {
        return PartShards.newShardSizes(part);
    }

    /** One source worker's pieces: those readable at once, then the late ranks' as they become readable. */
    private record Flow(Queue<Task> now, LateQueue<Task> later) {
        int size() {
            return now.size() + later.size();
        }

        Task next(Tally tally, java.util.function.BooleanSupplier cancelled) throws InterruptedException {
            Task t = now.poll();
            return t != null ? t : later.take(() -> tally.failure.get() != null || cancelled.getAsBoolean());
        }
    }

    /** What one lane of a flow needs. */
    private record Lane(java.util.function.IntFunction<Device> sourceDevice, ShardSink sink, AtomicLong progress,
            Tally tally, int worker, long pace) {}

    /** Fetches pieces of one flow until it is empty, or the run failed or was cancelled (then it fails). */
    private void drain(Flow queue, Lane l, Phaser lanes) {
        try {
            for (Task t; l.tally().failure.get() == null && notCancelled(l.tally())
                    && (t = queue.next(l.tally(), () -> cancelled != null)) != null; ) {
                // a late rank's pieces unpaced: the flow's rate planned them as read from the start, but they
                // only become readable once the rank is rebuilt, when the flows they shared links with are done
                fetch(l.sourceDevice(), t.shard, t.piece, t.buf, l.tally(), l.worker(),
                        late.contains(t.piece.sourceRank()) ? 0 : l.pace());
                l.progress().addAndGet(t.piece.bytes());
                if (t.left.decrementAndGet() == 0 && l.tally().failure.get() == null) {
                    l.sink().complete(t.shard.destRank(), t.shard.key());
                }
            }
            // the loop also ends when a cancel stops the wait for a late piece (the late queue answers null with
            // pieces left): their shards stay open, and a run answering as complete would have its caller keep
            // them (a part aborted while its lost rank was rebuilt never freed its staging buffers)
            notCancelled(l.tally());
        } catch (Throwable e) {
            l.tally().failure.compareAndSet(null, e);
        } finally {
            lanes.arriveAndDeregister();
        }
    }

    /** Whether the run goes on; once cancelled, the run's failure says why. */
    private boolean notCancelled(Tally tally) {
        String why = cancelled;
        if (why != null) {
            tally.failure.compareAndSet(null, new java.util.concurrent.CancellationException(why));
        }
        return why == null;
    }

    private record Task(ShardPlan shard, Piece piece, ByteBuffer buf, AtomicInteger left) {}

    /**
     * Reads a piece once from {@code rank}: straight into the shard's buffer when {@code direct} (the
     * destination region, contiguous) is given, else into a scratch buffer scattered afterwards; the
     * bytes are checked against the checksum the source vouches for. The pace is the flow's from the
     * first holder; reads from other replicas are unpaced.
     */
    private void readOnce(int rank, Device device, ShardPlan shard, Piece piece, ByteBuffer buf, Region direct,
            Tally tally, int worker, long pace) throws IOException {
        int item = shard.dtype().itemSize();
        int bytes = Math.toIntExact(piece.bytes());
        ByteBuffer target = direct != null
                ? buf.slice(Math.toIntExact(RegionScatter.offset(direct, shard.shape(), item)), bytes)
                : ByteBuffer.allocate(bytes);
        OptionalInt vouched = source.read(rank, device, piece.sourceKey(), piece.source(), target.duplicate(), pace);
        if (vouched.isPresent()) {
            CRC32C crc = new CRC32C();
            crc.update(target.duplicate());
            if ((int) crc.getValue() != vouched.getAsInt()) {
                throw new CorruptTransferException("checksum mismatch reading " + piece.sourceKey() + " ["
                        + piece.source() + "] from rank " + rank + " (" + device + ")");
            }
        }
        if (direct == null) {
            RegionScatter.scatter(target, Region.at(piece.destOffset(), piece.source().shape().dims()), shard.shape(),
                    buf, item);
        }
        int here = worker >= 0 ? worker : shard.destDevice().worker();
        (device.worker() == here ? tally.local : tally.remote).addAndGet(bytes);
    }

    /** Where a piece is read first: its own source device (a copy of the rank's tree, when recovering) or the rank's. */
    private static Device first(Piece piece, java.util.function.IntFunction<Device> sourceDevice) {
        return piece.sourceDevice() != null ? piece.sourceDevice() : sourceDevice.apply(piece.sourceRank());
    }

    private void fetch(java.util.function.IntFunction<Device> sourceDevice, ShardPlan shard, Piece piece, ByteBuffer buf,
            Tally tally, int worker, long pace)
            throws ExecutionFailedException {
        Region dest = Region.at(piece.destOffset(), piece.source().shape().dims());
        boolean direct = RegionScatter.isContiguous(dest, shard.shape());
        List<Integer> order = new ArrayList<>();
        order.add(piece.sourceRank());
        for (int r : piece.replicas()) {
            if (r != piece.sourceRank()) {
                order.add(r);
            }
        }
        IOException last = null;
        boolean refetched = false;
        for (int i = 0; i < order.size(); i++) {
            int rank = order.get(i);
            try {
                readOnce(rank, i == 0 ? first(piece, sourceDevice) : sourceDevice.apply(rank), shard, piece, buf,
                        direct ? dest : null, tally, worker, i == 0 ? pace : 0);
                return;
            } catch (CorruptTransferException e) {
                tally.corrupted.incrementAndGet();
                tally.retries.incrementAndGet();
                last = e;
                if (i == order.size() - 1 && !refetched) {
                    refetched = true; // bytes damaged in transit: fetch once more from the last holder
                    order.add(rank);
                }
            } catch (IOException e) {
                tally.retries.incrementAndGet();
                last = e;
            }
        }
        throw new ExecutionFailedException("piece " + piece.sourceKey() + " [" + piece.source() + "] of rank "
                + shard.destRank() + "'s " + shard.key() + " failed on every replica " + order + ": "
                + (last == null ? "" : last.getMessage()), last);
    }
}
