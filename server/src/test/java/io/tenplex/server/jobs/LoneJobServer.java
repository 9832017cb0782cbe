package io.tenplex.server.jobs;

import io.tenplex.server.RestServer;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;

/**
 * A daemon alone on loopback with the job routes (worker 0 is itself), for tests of those routes
 * over real HTTP. Closing stops the server, the job pools and the peer client.
 */
public final class LoneJobServer implements AutoCloseable {
    public final TensorStore store;
    public final JobsFixture jobs;
    private final PeerClient peers = new PeerClient(2, null);
    private final RestServer server;
    private final InetSocketAddress address;

    public LoneJobServer(long memoryLimit) throws InterruptedException {
        store = new TensorStore(new Allocator(memoryLimit));
        jobs = new JobsFixture(store, peers, Duration.ofSeconds(30));
        server = new RestServer(store, null);
        server.addControl(JobsFixture.PREFIX, jobs);
        address = server.start("127.0.0.1", 0);
        jobs.setDefaultDaemons(Map.of(0, address));
    }

    /** {@code http://127.0.0.1:PORT}. */
    public String url() {
        return "http://127.0.0.1:" + address.getPort();
    }

    @Override
    public void close() {
        server.close();
        jobs.close();
        peers.close();
    }
}
