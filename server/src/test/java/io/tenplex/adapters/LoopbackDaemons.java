package io.tenplex.adapters;

import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.server.RestServer;
import io.tenplex.server.jobs.JobsFixture;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Daemons in this process, one per worker, each a store with the job routes behind a REST server on
 * loopback, knowing each other as tenplexd {@code --peers} would, and a peer client between them.
 */
final class LoopbackDaemons implements AutoCloseable {
    final List<TensorStore> stores = new ArrayList<>();
    final List<RestServer> servers = new ArrayList<>();
    final List<JobsFixture> services = new ArrayList<>();
    final Map<Integer, InetSocketAddress> daemons = new LinkedHashMap<>();
    private final PeerClient peers = new PeerClient(4, null);

    /** Starts {@code workers} daemons of {@code memory} bytes each. */
    LoopbackDaemons(int workers, long memory) throws Exception {
        for (int w = 0; w < workers; w++) {
            TensorStore store = new TensorStore(new Allocator(memory));
            JobsFixture jobs = new JobsFixture(store, peers, Duration.ofSeconds(30));
            RestServer s = new RestServer(store, null);
            s.addControl(JobsFixture.PREFIX, jobs);
            daemons.put(w, s.start("127.0.0.1", 0));
            stores.add(store);
            servers.add(s);
            services.add(jobs);
        }
        services.forEach(j -> j.setDefaultDaemons(daemons)); // as tenplexd --peers would
        for (int w = 0; w < workers; w++) {
            services.get(w).setSelfAddress(daemons.get(w)); // as tenplexd does: parts in doubt ask the coordinator
        }
    }

    /**
     * Saves every rank of {@code from} (tensors from {@code seed}, and each value as "key of rank r")
     * on the daemon of its worker; answers the whole tensors by name.
     */
    Map<String, byte[]> save(JobLayout paths, Ptc from, long seed) {
        Map<String, byte[]> full = SavedJobs.save(stores, paths, from, seed);
        for (int rank = 0; rank < from.worldSize(); rank++) {
            TensorStore store = stores.get(from.device(rank).worker());
            for (ValueSpec v : from.model().values()) {
                Fixtures.putFile(store, paths.saved(rank, v.key()).toString(),
                        (v.key() + " of rank " + rank).getBytes(StandardCharsets.UTF_8), false);
            }
        }
        return full;
    }

    @Override
    public void close() {
        servers.forEach(RestServer::close);
        services.forEach(JobsFixture::close);
        peers.close();
        stores.forEach(TensorStore::close);
    }
}
