package io.tenplex.datasets.streams;

import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a job's stream at every daemon of it and at the daemon asked, in the order of their addresses, so that of two
 * creates racing one wins at the first daemon and the other is a conflict there; a create failing at
 * a daemon removes the stream from the daemons that took it.
 */
final class Creation {
    private static final Logger LOG = LoggerFactory.getLogger(Creation.class);

    private final String job;
    private final StreamConfig config;
    private final StreamService local;
    private final StreamPeers peers;

    Creation(String job, StreamConfig config, StreamService local, StreamPeers peers) {
        this.job = job;
        this.config = config;
        this.local = local;
        this.peers = peers;
    }

    void run() {
        List<String> made = new ArrayList<>();
        try {
            List<String> all = new ArrayList<>(config.daemons());
            if (all.stream().noneMatch(local::isSelf)) {
                all.add(local.selfAddress()); // the daemon asked keeps the stream too (it relays)
            }
            for (String d : all.stream().sorted().toList()) {
                if (local.isSelf(d)) {
                    local.createLocal(job, config);
                } else {
                    peers.create(d, job, config);
                }
                made.add(d);
            }
        } catch (RuntimeException e) {
            made.forEach(d -> local.forget(d, job));
            throw e;
        }
        LOG.info("job={} stream created: {} over {} ranks", job, config.spec(), config.dp());
    }
}
