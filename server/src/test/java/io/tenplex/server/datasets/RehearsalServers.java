package io.tenplex.server.datasets;

import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.server.RestServer;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Daemons' REST servers on loopback with a rehearsal service each (its routes and its metrics), each
 * knowing the others as peers, over real HTTP with the peer client between them.
 */
final class RehearsalServers implements AutoCloseable {
    final DaemonLink link = DaemonLink.plain(null);
    /** {@code host:port} of each daemon. */
    final List<String> addresses = new CopyOnWriteArrayList<>();
    /** {@code http://host:port} of each daemon. */
    final List<String> bases = new ArrayList<>();
    /** The rehearsal route of job {@code j} on each daemon. */
    final List<String> urls = new ArrayList<>();
    final List<RehearsalService> services = new ArrayList<>();
    private final List<AutoCloseable> open = new ArrayList<>();
    private final ExecutorService work = Executors.newCachedThreadPool();

    /** Starts {@code n} more daemons whose rehearsal buffers may hold {@code budget} bytes each. */
    void start(int n, long budget) throws Exception {
        for (int i = 0; i < n; i++) {
            TensorStore store = new TensorStore(new Allocator(1 << 20));
            open.add(store);
            RestServer rest = new RestServer(store, null);
            open.add(rest);
            RehearsalService s = new RehearsalService(new HttpRehearsalPeers(link), budget);
            s.setPeers(() -> List.copyOf(addresses));
            rest.addControl(JobLayout.API_PREFIX, new RehearsalRoutes(s, work));
            rest.metrics().register(new RehearsalMetrics(s));
            InetSocketAddress a = rest.start("127.0.0.1", 0);
            addresses.add("127.0.0.1:" + a.getPort());
            s.setSelfAddress(addresses.get(addresses.size() - 1));
            services.add(s);
            bases.add("http://127.0.0.1:" + a.getPort());
            urls.add(bases.get(bases.size() - 1) + JobLayout.API_PREFIX + "j/rehearsal");
        }
    }

    /** Closed with the daemons. */
    void closeLater(AutoCloseable c) {
        open.add(c);
    }

    HttpResponse<byte[]> send(String method, String url, byte[] body) throws Exception {
        return link.http().send(HttpRequest.newBuilder(URI.create(url)).method(method, body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
    }

    @Override
    public void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
        work.shutdownNow();
    }
}
