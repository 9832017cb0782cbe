package io.tenplex.daemon;

import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.rest.RestServer;
import java.net.InetSocketAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The lifecycle stack: store, then REST; closed in reverse. Close is idempotent. */
public final class Daemon implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Daemon.class);

    private final TensorStore store;
    private final RestServer rest;
    private final InetSocketAddress address;
    private boolean closed;

    private Daemon(TensorStore store, RestServer rest, InetSocketAddress address) {
        this.store = store;
        this.rest = rest;
        this.address = address;
    }

    public static Daemon start(DaemonConfig cfg) throws InterruptedException {
        if (cfg.mount() != null) {
            throw new IllegalArgumentException("--mount " + cfg.mount() + ": the FUSE view is not part of this build "
                    + "yet; start without --mount and use the REST API");
        }
        TensorStore store = new TensorStore(new Allocator(cfg.memoryLimit()));
        RestServer rest = new RestServer(store, cfg.token());
        try {
            return new Daemon(store, rest, rest.start(cfg.bind(), cfg.port()));
        } catch (RuntimeException | InterruptedException e) {
            rest.close();
            store.close();
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
        rest.close();
        long held = store.allocator().usedBytes();
        try {
            store.close();
        } catch (IllegalStateException e) {
            LOG.warn("bytes still referenced at shutdown: {}", e.getMessage());
        }
        LOG.info("stopped (released {} bytes)", held);
    }
}
