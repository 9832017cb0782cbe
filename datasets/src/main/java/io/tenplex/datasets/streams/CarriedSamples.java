package io.tenplex.datasets.streams;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Samples given back for a rank whose buffer a re-partitioning took away from this daemon, once
 * this daemon holds no rank of the job's stream: sent to the daemon that holds the rank now (as a
 * relaying daemon gives a batch back), on the coordinator's threads. A daemon that cannot take them
 * now is tried again later, backing off up to a minute, for as long as the stream is here; they stay
 * counted in this daemon's stream memory meanwhile.
 */
final class CarriedSamples {
    private static final Logger LOG = LoggerFactory.getLogger(CarriedSamples.class);
    private static final long MAX_DELAY_MILLIS = 60_000;

    private final StreamService local;
    private final StreamPeers peers;
    private final ScheduledExecutorService timer;
    private final Executor work;

    CarriedSamples(StreamService local, StreamPeers peers, ScheduledExecutorService timer, Executor work) {
        this.local = local;
        this.peers = peers;
        this.timer = timer;
        this.work = work;
    }

    /** Places the stream's carried samples here, and sends those it cannot place to their ranks' daemons. */
    void place(String job, JobStream s) {
        place(job, s, 0);
    }

    private void place(String job, JobStream s, int tries) {
        Map<Integer, List<Sample>> away = s.placeCarried();
        if (!away.isEmpty()) {
            work.execute(() -> send(job, s, away, tries));
        }
    }

    private void send(String job, JobStream s, Map<Integer, List<Sample>> away, int tries) {
        StreamConfig c = s.config();
        Map<Integer, List<Sample>> failed = new TreeMap<>();
        for (Map.Entry<Integer, List<Sample>> e : away.entrySet()) {
            int rank = Math.floorMod(e.getKey(), c.dp());
            String owner = c.ranks().get(rank);
            try {
                if (local.isSelf(owner)) { // a config given meanwhile holds it here
                    s.carryAgain(rank, e.getValue());
                    timer.execute(() -> place(job, s, 0));
                } else { // the owner undoes a read of each, as for a relayed batch: the read was undone here
                    peers.giveBack(owner, job, rank, e.getValue().stream()
                            .map(x -> new Sample(x.id(), x.data(), x.reads() + 1)).toList());
                    LOG.info("job={} {} samples given back for rank {} after it moved went to daemon {}", job,
                            e.getValue().size(), e.getKey(), owner);
                }
            } catch (RuntimeException ex) {
                LOG.warn("job={} {} samples given back for rank {} could not go to daemon {} yet: {}", job,
                        e.getValue().size(), e.getKey(), owner, ex.getMessage());
                failed.put(e.getKey(), e.getValue());
            }
        }
        if (failed.isEmpty()) {
            return;
        }
        if (!local.has(job, s)) {
            LOG.error("job={} {} samples given back after their rank moved are lost: the stream was deleted here",
                    job, failed.values().stream().mapToInt(List::size).sum());
            return;
        }
        failed.forEach(s::carryAgain);
        long delay = Math.min(MAX_DELAY_MILLIS, 500L << Math.min(tries, 7));
        timer.schedule(() -> place(job, s, tries + 1), delay, TimeUnit.MILLISECONDS);
    }
}
