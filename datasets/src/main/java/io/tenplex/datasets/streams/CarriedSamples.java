package io.tenplex.datasets.streams;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Samples given back for a rank whose buffer a re-partitioning took away from this daemon, once
 * this daemon holds no rank of the job's stream: sent to the daemon that holds the rank now (as a
 * relaying daemon gives a batch back), in messages of at most 8 MiB, on the coordinator's threads.
 * Those a daemon could not take are carried again (counted in this daemon's stream memory, not while
 * on their way) and tried again later, backing off up to a minute, until the stream is deleted here.
 * A message the owner took whose answer was lost (a timeout) is sent again, as a relayed batch would be.
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
        boolean failed = false;
        for (Map.Entry<Integer, List<Sample>> e : away.entrySet()) {
            boolean sent = true;
            int rank = Math.floorMod(e.getKey(), c.dp());
            String owner = c.ranks().get(rank);
            if (local.isSelf(owner)) { // a config given meanwhile holds it here
                s.carryAgain(rank, e.getValue());
                timer.execute(() -> place(job, s, 0));
                continue;
            }
            List<List<Sample>> messages = messages(e.getValue());
            for (int i = messages.size() - 1; i >= 0; i--) { // each goes to the front of a FIFO: the last first
                try { // the owner undoes a read of each, as for a relayed batch: the read was undone here
                    peers.giveBack(owner, job, rank, messages.get(i).stream()
                            .map(x -> new Sample(x.id(), x.data(), x.reads() + 1)).toList());
                } catch (RuntimeException ex) {
                    int left = 0;
                    for (int k = 0; k <= i; k++) { // this one and those before it: none of them was taken
                        s.carryAgain(e.getKey(), messages.get(k));
                        left += messages.get(k).size();
                    }
                    LOG.warn("job={} {} samples given back for rank {} could not go to daemon {} yet: {}", job, left,
                            e.getKey(), owner, ex.getMessage());
                    sent = false;
                    break;
                }
            }
            failed |= !sent;
            if (sent) {
                LOG.info("job={} {} samples given back for rank {} after it moved went to daemon {}", job,
                        e.getValue().size(), e.getKey(), owner);
            }
        }
        if (failed) {
            long delay = Math.min(MAX_DELAY_MILLIS, 500L << Math.min(tries, 7));
            timer.schedule(() -> place(job, s, tries + 1), delay, TimeUnit.MILLISECONDS);
        }
    }

    /** Samples in messages of at most {@link StreamService#MESSAGE_BYTES} (at least one sample each), in order. */
    static List<List<Sample>> messages(List<Sample> samples) {
        List<List<Sample>> out = new ArrayList<>();
        List<Sample> m = new ArrayList<>();
        long bytes = 0;
        for (Sample x : samples) {
            if (!m.isEmpty() && bytes + x.data().length > StreamService.MESSAGE_BYTES) {
                out.add(m);
                m = new ArrayList<>();
                bytes = 0;
            }
            m.add(x);
            bytes += x.data().length + 20;
        }
        if (!m.isEmpty()) {
            out.add(m);
        }
        return out;
    }
}
