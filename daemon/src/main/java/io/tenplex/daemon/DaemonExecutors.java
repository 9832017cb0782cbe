package io.tenplex.daemon;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The daemon's named thread pools, created once here and handed to the components that run work on
 * them, so that their sizes come from {@link DaemonConfig.Tuning} and one place shuts them down (after
 * every component that runs work on them, before the store). Pools start their threads on first use.
 *
 * <p>Each field names its consumer; this holder shuts every pool down after its consumers have closed.
 */
final class DaemonExecutors implements AutoCloseable {
    /** Reconfiguration range reads from source daemons (the job lifecycle's readers). */
    final ExecutorService jobReaders;
    /** A job's background work: parts running, commits, broadcasts (the job lifecycle's background work). */
    final ExecutorService jobBackground;
    /** Resolves prepared parts left in doubt (the job lifecycle's timer). */
    final ScheduledExecutorService inDoubtTimer;
    /** Blocking REST work taken off the event loop (RestServer's {@code tenplex-work}). */
    final ExecutorService restWork;
    /** Dataset mount loads: samples and view reads (DatasetService's loaders). */
    final ExecutorService datasetLoaders;
    /** Checksums of saves committed through shared memory (SharedSaves' work), one thread a core. */
    final ExecutorService sharedWork;
    /** Durable-tier flushes, one at a time in completion order (DurableTier's {@code tenplex-durable}). */
    final ExecutorService durableWork;
    /** The peer client's Netty event loop (PeerClient's {@code tenplex-peer}). */
    final EventLoopGroup peerEventLoop;

    /** How long closing waits, over all pools, for interrupted work to end. */
    static final long SHUTDOWN_WAIT_SECONDS = 10;

    DaemonExecutors(DaemonConfig.Tuning t) {
        jobReaders = Executors.newFixedThreadPool(t.jobReaderThreads(), new DefaultThreadFactory("tenplex-fetch", true));
        jobBackground = Executors.newCachedThreadPool(new DefaultThreadFactory("tenplex-job", true));
        inDoubtTimer = Executors.newSingleThreadScheduledExecutor(new DefaultThreadFactory("tenplex-indoubt", true));
        restWork = Executors.newFixedThreadPool(t.restWorkThreads(), new DefaultThreadFactory("tenplex-work", true));
        datasetLoaders = t.datasetLoaderThreads() == 0
                ? Executors.newCachedThreadPool(new DefaultThreadFactory("tenplex-data-load", true))
                : Executors.newFixedThreadPool(t.datasetLoaderThreads(),
                        new DefaultThreadFactory("tenplex-data-load", true));
        sharedWork = Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors(),
                new DefaultThreadFactory("tenplex-shm", true));
        durableWork = Executors.newSingleThreadExecutor(new DefaultThreadFactory("tenplex-durable", true));
        peerEventLoop = new MultiThreadIoEventLoopGroup(t.peerEventLoopThreads(),
                new DefaultThreadFactory("tenplex-peer", true), NioIoHandler.newFactory());
    }

    /** Stops every pool; running tasks are interrupted (their components have closed before). */
    @Override
    public void close() {
        ExecutorService[] all = {jobReaders, jobBackground, inDoubtTimer, restWork, datasetLoaders, sharedWork,
            durableWork};
        for (ExecutorService e : all) {
            e.shutdownNow();
        }
        // interrupted work ends before the store closes, so nothing writes into memory being freed
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(SHUTDOWN_WAIT_SECONDS);
        try {
            for (ExecutorService e : all) {
                e.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        peerEventLoop.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
