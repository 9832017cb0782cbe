package io.tenplex.daemon;

import io.netty.handler.ssl.SslContext;
import io.tenplex.adapters.ChangeJournal;
import io.tenplex.adapters.JobGauges;
import io.tenplex.adapters.ResourceChanges;
import io.tenplex.adapters.rendezvous.Rendezvous;
import io.tenplex.adapters.rendezvous.RendezvousJobs;
import io.tenplex.datasets.DatasetExecutors;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.datasets.streams.StreamMemory;
import io.tenplex.datasets.streams.StreamService;
import io.tenplex.fuse.TenplexFuse;
import io.tenplex.jobs.JobExecutors;
import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.StopFlags;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.durable.DurableMetrics;
import io.tenplex.jobs.durable.DurableTier;
import io.tenplex.jobs.durable.SharedDurableDirs;
import io.tenplex.jobs.shared.SharedSaves;
import io.tenplex.server.RestServer;
import io.tenplex.server.datasets.DatasetRoutes;
import io.tenplex.server.datasets.HttpShardPeers;
import io.tenplex.server.datasets.RehearsalMetrics;
import io.tenplex.server.jobs.HttpDaemonClient;
import io.tenplex.server.jobs.JobRoutes;
import io.tenplex.server.jobs.RendezvousRoutes;
import io.tenplex.server.jobs.NettyRangeReads;
import io.tenplex.server.jobs.PlanningPool;
import io.tenplex.server.jobs.StopRoute;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.server.peer.TlsFiles;
import io.tenplex.server.streams.HttpStreamPeers;
import io.tenplex.server.streams.StreamMetrics;
import io.tenplex.server.streams.StreamResizes;
import io.tenplex.server.streams.StreamRoutes;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.SharedSegments;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lifecycle stack: store, executors, peer client, dataset and job services, REST, then the FUSE
 * mount (when asked); closed in reverse by a {@link Lifecycle}, also when a later start fails. Close
 * is idempotent.
 */
public final class Daemon implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Daemon.class);

    /** Unused segments are kept this long for the next save before they are deleted. */
    static final long KEEP_UNUSED_SEGMENT_NANOS = TimeUnit.MINUTES.toNanos(10);

    private final Lifecycle life;
    private final TensorStore store;
    private final InetSocketAddress address;

    private Daemon(Lifecycle life, TensorStore store, InetSocketAddress address) {
        this.life = life;
        this.store = store;
        this.address = address;
    }

    public static Daemon start(DaemonConfig cfg) throws InterruptedException, IOException {
        DaemonConfig.Tls tls = cfg.tls(); // TLS files are checked before anything starts
        SslContext ssl = tls == null ? null : TlsFiles.server(tls.cert(), tls.key());
        DaemonLink link = tls == null ? DaemonLink.plain(cfg.token()) : DaemonLink.tls(tls.ca(), cfg.token());
        Lifecycle life = new Lifecycle();
        try {
            return start(cfg, ssl, link, life);
        } catch (RuntimeException | InterruptedException | IOException e) {
            life.close();
            throw e;
        }
    }

    private static Daemon start(DaemonConfig cfg, SslContext ssl, DaemonLink link, Lifecycle life)
            throws InterruptedException, IOException {
        DaemonConfig.Tuning tuning = cfg.tuning();
        java.nio.file.Path checkpoints = Durable.own(tuning.checkpointDir(), cfg.bind(), cfg.port(), cfg.peers());
        Durable.lock(checkpoints, life); // first, so it is released last
        TensorStore store = new TensorStore(new Allocator(cfg.memoryLimit()));
        life.add("store", store, () -> closeStore(store));
        DaemonExecutors pools = life.add("executors", new DaemonExecutors(tuning));
        PeerClient peers = life.add("peer client", new PeerClient(link, tuning.peerConnections(), pools.peerEventLoop));
        DatasetService datasets = life.add("datasets", new DatasetService(store.allocator(), cfg.sources(),
                new HttpShardPeers(link), DatasetExecutors.standard(pools.datasetLoaders)));
        StopFlags flags = new StopFlags();
        PlanningPool planning = life.add("planning", new PlanningPool()); // planning and sealing: never on the event loop
        Jobs jobs = life.add("jobs", new Jobs(store, new HttpDaemonClient(link, tuning.coordinatorTimeout()),
                new NettyRangeReads(peers), new JobExecutors(pools.jobReaders, pools.jobBackground, pools.inDoubtTimer),
                flags), () -> { });
        SharedSaves shared = sharedSaves(tuning, store, jobs, pools, life);
        RestServer rest = life.add("rest", new RestServer(store, cfg.token(), cfg.limits(), ssl, pools.restWork));
        configureJobs(cfg, jobs);
        SharedDurableDirs.of(tuning.checkpointDir(), store).ifPresent(jobs::setDurableCopies);
        DurableTier durable = Durable.start(checkpoints, store, jobs.generations(), pools.durableWork,
                Durable.repairs(store, jobs.generations(), new HttpDaemonClient(link, tuning.coordinatorTimeout()),
                        new NettyRangeReads(peers), cfg::peers)); // before serving
        java.util.Optional.ofNullable(durable).ifPresent(d -> rest.metrics().register(new DurableMetrics(d)));
        StreamService streams = life.add("streams", new StreamService(new HttpStreamPeers(link),
                tuning.streamMemory() == 0 ? StreamMemory.ofMaxHeap() : new StreamMemory(tuning.streamMemory())));
        streams.allowPeers(peerAddresses(cfg), cfg.sources()); // addresses in stream requests
        ResourceChanges changes = resourceChanges(jobs, streams, rest, ChangeJournal.under(checkpoints), flags);
        JobRoutes jobRoutes = new JobRoutes(jobs, changes, planning, shared).withStreams(new StreamRoutes(streams, link));
        rest.addControl(JobRoutes.PREFIX, jobRoutes);
        Rendezvous rendezvous = rendezvous(jobRoutes, jobs, changes, store);
        RehearsalService rehearsal = Rehearsal.wire(cfg, link, changes, jobRoutes, pools.jobBackground);
        rest.metrics().register(new RehearsalMetrics(rehearsal));
        jobRoutes.withRemoval(JobRemovals.wire(new io.tenplex.jobs.JobRemoval(store, jobs, new HttpDaemonClient(link,
                tuning.coordinatorTimeout())), changes, durable, streams, datasets, rehearsal, shared, rendezvous));
        rest.addControl(StopRoute.PATH, new StopRoute(flags, jobs::requireKnown));
        datasets.setDefaultPeers(peerAddresses(cfg));
        rest.addControl(DatasetRoutes.PREFIX, new DatasetRoutes(datasets));
        InetSocketAddress address = rest.start(cfg.bind(), cfg.port());
        jobs.setSelfAddress(address); // parts in doubt ask the coordinator here
        streams.setSelf(address.getHostString(), address.getPort());
        rehearsal.setSelfAddress(address.getHostString() + ":" + address.getPort());
        if (cfg.peers().isEmpty()) {
            jobs.setDefaultDaemons(Map.of(0, address)); // alone: this daemon is worker 0
        }
        if (cfg.mount() != null) {
            life.start("fuse", () -> mount(new TenplexFuse(store, datasets), cfg.mount()));
        }
        return new Daemon(life, store, address);
    }

    /**
     * The resource changes of the jobs (a committed one resizes the job's streams), with the streams' and
     * the jobs' families in {@code /metrics}: the per-job gauges list only the jobs known at each scrape.
     */
    private static ResourceChanges resourceChanges(Jobs jobs, StreamService streams, RestServer rest,
            ChangeJournal journal, StopFlags flags) {
        rest.metrics().register(new StreamMetrics(streams));
        ResourceChanges changes = new ResourceChanges(jobs).addCommitListener(new StreamResizes(streams,
                () -> jobs.daemons(Map.of())));
        rest.metrics().register(new JobGauges(jobs, changes));
        if (journal != null) { // the jobs' pending changes and raised flags are part of their durable state
            List<ChangeJournal.Flag> kept = journal.flags();
            flags.keepWith((job, f) -> journal.flag(job, f != null, f == null ? java.util.OptionalLong.empty()
                    : f.atStep(), f == null ? "" : f.reason()));
            kept.forEach(f -> flags.raise(f.job(), f.atStep(), f.reason()));
            changes.withJournal(journal);
        }
        return changes;
    }

    /** Serves the torchrun rendezvous of the jobs (a node that names no daemon has this one). */
    private static Rendezvous rendezvous(JobRoutes routes, Jobs jobs, ResourceChanges changes, TensorStore store) {
        Rendezvous r = new Rendezvous(RendezvousJobs.of(jobs, changes, job -> store.mkdirs(new JobLayout(job).root())));
        routes.addGroup(RendezvousRoutes.SEGMENT, new RendezvousRoutes(r, jobs::selfAddress));
        routes.withChangeGuard(r::refusesChanges);
        return r;
    }

    /** Saves and loads through shared memory, when on (the directory exists) and possible here; null otherwise. */
    private static SharedSaves sharedSaves(DaemonConfig.Tuning tuning, TensorStore store, Jobs jobs,
            DaemonExecutors pools, Lifecycle life) {
        java.nio.file.Path dir = tuning.sharedMemory();
        if (dir == null || !java.nio.file.Files.isDirectory(dir) || !java.nio.file.Files.isWritable(dir)) {
            if (dir != null) {
                LOG.warn("no shared memory: {} is not a writable directory (trainers save and load over REST)", dir);
            }
            return null;
        }
        if (SharedSegments.unavailable() != null) {
            LOG.warn("no shared memory: {} (trainers save and load over REST)", SharedSegments.unavailable());
            return null;
        }
        SharedSegments segments = life.add("shared memory", new SharedSegments(dir, store.allocator()));
        SharedSaves shared = life.add("shared saves", new SharedSaves(jobs, store, segments, pools.sharedWork));
        jobs.setMoveSegments(segments); // moved shards where a load on this host maps them
        var reaper = pools.inDoubtTimer.scheduleWithFixedDelay(() -> reap(shared), 1, 1, TimeUnit.SECONDS);
        life.add("shared-memory reaper", reaper, () -> reaper.cancel(false));
        return shared;
    }

    private static void reap(SharedSaves shared) {
        try {
            int ended = shared.reap(KEEP_UNUSED_SEGMENT_NANOS);
            if (ended > 0) {
                LOG.info("ended {} shared-memory handouts whose owner is gone or whose lease ran out", ended);
            }
        } catch (RuntimeException e) {
            LOG.warn("shared-memory reaper: {}", e.toString());
        }
    }

    private static TenplexFuse mount(TenplexFuse fuse, java.nio.file.Path dir) throws IOException {
        fuse.mountAt(dir);
        return fuse;
    }

    private static void configureJobs(DaemonConfig cfg, Jobs jobs) {
        jobs.setDefaultDaemons(cfg.peers());
        jobs.setLinkRate(cfg.linkRate());
        jobs.setPreparedTimeout(cfg.preparedTimeout());
    }

    private static List<String> peerAddresses(DaemonConfig cfg) {
        List<String> others = new ArrayList<>();
        cfg.peers().values().forEach(a -> others.add(a.getHostString() + ":" + a.getPort()));
        return others;
    }

    private static void closeStore(TensorStore store) {
        long held = store.allocator().usedBytes();
        try {
            store.close();
        } catch (IllegalStateException e) {
            LOG.warn("bytes still referenced at shutdown: {}", e.getMessage());
        }
        LOG.info("stopped (released {} bytes)", held);
    }

    public InetSocketAddress address() {
        return address;
    }

    public TensorStore store() {
        return store;
    }

    @Override
    public void close() {
        life.close();
    }
}
