package io.tenplex.server.jobs;

import io.tenplex.adapters.ResourceChanges;
import io.tenplex.jobs.JobExecutors;
import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.StopFlags;
import io.tenplex.server.ControlHandler;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.store.TensorStore;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One daemon's job lifecycle and its routes, wired as tenplexd wires them (HTTP daemon client, Netty
 * range reads, its own executors), for tests that run daemons on loopback. Closing stops its pools.
 */
public final class JobsFixture implements ControlHandler, AutoCloseable {
    public static final String PREFIX = JobRoutes.PREFIX;

    private final JobExecutors executors = JobExecutors.standard();
    private final PlanningPool planning = new PlanningPool();
    private final Jobs jobs;
    private final JobRoutes routes;

    public JobsFixture(TensorStore store, PeerClient peers, Duration timeout) {
        this(store, peers, timeout, new StopFlags());
    }

    public JobsFixture(TensorStore store, PeerClient peers, Duration timeout, StopFlags flags) {
        HttpDaemonClient client = new HttpDaemonClient(peers.link(), timeout);
        this.jobs = new Jobs(store, client, new NettyRangeReads(peers), executors, flags);
        this.routes = new JobRoutes(jobs, new ResourceChanges(jobs), planning);
    }

    public Jobs jobs() {
        return jobs;
    }

    public StopFlags stopFlags() {
        return jobs.stopFlags();
    }

    public void setDefaultDaemons(Map<Integer, InetSocketAddress> daemons) {
        jobs.setDefaultDaemons(daemons);
    }

    public void setSelfAddress(InetSocketAddress address) {
        jobs.setSelfAddress(address);
    }

    public void setPartRetention(Duration retention) {
        jobs.setRetention(retention);
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        return routes.handle(req);
    }

    @Override
    public void close() {
        planning.close();
        executors.close();
    }
}
