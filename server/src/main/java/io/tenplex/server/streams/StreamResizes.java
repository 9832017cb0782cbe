package io.tenplex.server.streams;

import io.tenplex.adapters.CommitListener;
import io.tenplex.datasets.streams.StreamService;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.RankLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Re-partitions a job's streamed-sample buffers when a resource change commits: data-parallel rank
 * d of the new configuration is served by the daemon of the worker that holds global rank
 * (tp 0, dp d, pp 0) in Megatron order. Jobs without a stream here are left alone.
 */
public final class StreamResizes implements CommitListener {
    private static final Logger LOG = LoggerFactory.getLogger(StreamResizes.class);
    private static final long TIMEOUT_MINUTES = 10;

    private final StreamService streams;
    private final Supplier<Map<Integer, InetSocketAddress>> defaults;

    /** @param defaults the daemon of each worker when a change names none (the daemon's peers) */
    public StreamResizes(StreamService streams, Supplier<Map<Integer, InetSocketAddress>> defaults) {
        this.streams = streams;
        this.defaults = defaults;
    }

    @Override
    public String committed(String job, ParallelConfig c, List<Device> devices, Map<Integer, InetSocketAddress> daemons)
            throws Exception {
        if (streams.all().stream().noneMatch(s -> s.job().equals(job))) {
            return null;
        }
        List<String> ranks = ranks(c, devices, daemons.isEmpty() ? defaults.get() : daemons);
        if (ranks.equals(streams.config(job).ranks())) {
            return null;
        }
        streams.repartition(job, ranks).get(TIMEOUT_MINUTES, TimeUnit.MINUTES);
        LOG.info("job={} stream follows the resource change: {} data-parallel ranks on {}", job, c.dp(), ranks);
        return "streamed-sample buffers re-partitioned over " + c.dp() + " data-parallel ranks";
    }

    @Override
    public String feature() {
        return "streamed-sample buffers";
    }

    /** The daemon ({@code host:port}) of each data-parallel rank of {@code c}. */
    static List<String> ranks(ParallelConfig c, List<Device> devices, Map<Integer, InetSocketAddress> daemons) {
        List<String> out = new ArrayList<>();
        for (int d = 0; d < c.dp(); d++) {
            int rank = RankLayout.MEGATRON.rank(new RankLayout.Coord(0, d, 0), c);
            int worker = devices.get(rank).worker();
            InetSocketAddress a = daemons.get(worker);
            if (a == null) {
                throw new IllegalStateException("no daemon address for worker " + worker + " (data-parallel rank "
                        + d + ")");
            }
            out.add(a.getHostString() + ":" + a.getPort());
        }
        return out;
    }
}
