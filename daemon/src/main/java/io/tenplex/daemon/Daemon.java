package io.tenplex.daemon;

import io.tenplex.adapters.JobService;
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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
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
    private final JobService jobs;
    private final DatasetService datasets;
    private final InetSocketAddress address;
    private TenplexFuse fuse;
    private ExecutorService restWork;
    private boolean closed;

    private Daemon(TensorStore store, RestServer rest, PeerClient peers, JobService jobs, DatasetService datasets,
            InetSocketAddress address) {
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
        ExecutorService restWork = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "tenplex-work");
            t.setDaemon(true);
            return t;
        });
        RestServer rest = new RestServer(store, cfg.token(), cfg.limits(), ssl, restWork);
        PeerClient peers = new PeerClient(link, 8);
        StopFlags flags = new StopFlags();
        JobService jobs = new JobService(store, peers, java.time.Duration.ofMinutes(10), cfg.token(), flags);
        jobs.setDefaultDaemons(cfg.peers());
        jobs.setLinkRate(cfg.linkRate());
        jobs.setPreparedTimeout(cfg.preparedTimeout());
        rest.addControl(JobService.PREFIX, jobs);
        rest.addControl(StopFlags.COMPAT_PATH, flags);
        DatasetService datasets = new DatasetService(link, store.allocator(), cfg.sources());
        List<String> others = new ArrayList<>();
        cfg.peers().values().forEach(a -> others.add(a.getHostString() + ":" + a.getPort()));
        datasets.setDefaultPeers(others);
        rest.addControl(DatasetService.PREFIX, datasets);
        Daemon d = null;
        try {
            d = new Daemon(store, rest, peers, jobs, datasets, rest.start(cfg.bind(), cfg.port()));
            d.restWork = restWork;
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
                restWork.shutdown();
                jobs.close();
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
        restWork.shutdown();
        jobs.close();
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
}
