package io.tenplex.daemon;

import io.tenplex.adapters.ResourceChanges;
import io.tenplex.jobs.JobExecutors;
import io.tenplex.jobs.Jobs;
import io.tenplex.server.jobs.HttpDaemonClient;
import io.tenplex.server.jobs.JobRoutes;
import io.tenplex.server.jobs.NettyRangeReads;
import io.tenplex.server.jobs.PlanningPool;
import io.tenplex.server.jobs.StopRoute;
import io.tenplex.jobs.StopFlags;
import io.tenplex.datasets.DatasetService;
import java.util.ArrayList;
import java.util.List;
import io.tenplex.fuse.TenplexFuse;
import io.tenplex.store.TensorStore;
import io.netty.handler.ssl.SslContext;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.server.peer.TlsFiles;
import io.tenplex.store.memory.Allocator;
import io.tenplex.server.RestServer;
import java.net.InetSocketAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lifecycle stack: store, peer client and job service, REST, then the FUSE mount (when asked);
 * closed in reverse. Close is idempotent.
 */
public final class Daemon implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Daemon.class);

    private final TensorStore store;
    private final RestServer rest;
    private final PeerClient peers;
    private final Jobs jobs;
    /** The job lifecycle's pools (planning, fetches, coordinators, timers), closed after REST. */
    private final AutoCloseable jobPools;
    private final DatasetService datasets;
    private final InetSocketAddress address;
    private TenplexFuse fuse;
    private boolean closed;

    private Daemon(TensorStore store, RestServer rest, PeerClient peers, Jobs jobs, AutoCloseable jobPools,
            DatasetService datasets, InetSocketAddress address) {
        this.jobPools = jobPools;
        this.store = store;
        this.datasets = datasets;
        this.rest = rest;
        this.peers = peers;
        this.jobs = jobs;
        this.address = address;
    }

    public static Daemon start(DaemonConfig cfg) throws InterruptedException, java.io.IOException {
        DaemonConfig.Tls tls = cfg.tls(); // TLS files are checked before anything starts
        SslContext ssl = tls == null ? null : TlsFiles.server(tls.cert(), tls.key());
        DaemonLink link = tls == null ? DaemonLink.plain(cfg.token()) : DaemonLink.tls(tls.ca(), cfg.token());
        TensorStore store = new TensorStore(new Allocator(cfg.memoryLimit()));
        RestServer rest = new RestServer(store, cfg.token(), cfg.limits(), ssl);
        PeerClient peers = new PeerClient(link, 8);
        StopFlags flags = new StopFlags();
        JobExecutors executors = JobExecutors.standard();
        PlanningPool planning = new PlanningPool(); // planning and sealing: never on the event loop
        AutoCloseable jobPools = closing(planning, executors);
        Jobs jobs = new Jobs(store, new HttpDaemonClient(link, java.time.Duration.ofMinutes(10)), new NettyRangeReads(peers),
                executors, flags);
        jobs.setDefaultDaemons(cfg.peers());
        jobs.setLinkRate(cfg.linkRate());
        jobs.setPreparedTimeout(cfg.preparedTimeout());
        rest.addControl(JobRoutes.PREFIX, new JobRoutes(jobs, new ResourceChanges(jobs), planning));
        rest.addControl(StopRoute.PATH, new StopRoute(flags));
        DatasetService datasets = new DatasetService(link, store.allocator(), cfg.sources());
        List<String> others = new ArrayList<>();
        cfg.peers().values().forEach(a -> others.add(a.getHostString() + ":" + a.getPort()));
        datasets.setDefaultPeers(others);
        rest.addControl(DatasetService.PREFIX, datasets);
        Daemon d = null;
        try {
            d = new Daemon(store, rest, peers, jobs, jobPools, datasets, rest.start(cfg.bind(), cfg.port()));
            jobs.setSelfAddress(d.address); // parts in doubt ask the coordinator here
            if (cfg.peers().isEmpty()) {
                jobs.setDefaultDaemons(java.util.Map.of(0, d.address)); // alone: this daemon is worker 0
            }
            if (cfg.mount() != null) {
                TenplexFuse f = new TenplexFuse(store, datasets);
                f.mountAt(cfg.mount());
                d.fuse = f;
            }
            return d;
        } catch (RuntimeException | InterruptedException | java.io.IOException e) {
            if (d != null) {
                d.close();
            } else {
                rest.close();
                closeQuietly(jobPools);
                datasets.close();
                peers.close();
                store.close();
            }
            throw e;
        }
    }

    public InetSocketAddress address() {
        return address;
    }

    public TensorStore store() {
        return store;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (fuse != null) {
            fuse.close();
        }
        rest.close();
        closeQuietly(jobPools);
        datasets.close();
        peers.close();
        long held = store.allocator().usedBytes();
        try {
            store.close();
        } catch (IllegalStateException e) {
            LOG.warn("bytes still referenced at shutdown: {}", e.getMessage());
        }
        LOG.info("stopped (released {} bytes)", held);
    }

    /** Closes each in turn. */
    private static AutoCloseable closing(AutoCloseable... all) {
        return () -> {
            for (AutoCloseable c : all) {
                c.close();
            }
        };
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            LOG.warn("closing the job pools: {}", e.toString());
        }
    }
}
