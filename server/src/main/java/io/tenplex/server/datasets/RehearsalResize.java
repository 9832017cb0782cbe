package io.tenplex.server.datasets;

import io.tenplex.adapters.CommitListener;
import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.RankLayout;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * Re-partitions a job's rehearsal buffer when a resource change has committed a new configuration:
 * data-parallel rank d of the new configuration is served by the daemon of the device of global rank
 * (tp 0, dp d, pp 0) in Megatron's rank order. Jobs without a rehearsal buffer are left alone.
 */
public final class RehearsalResize implements CommitListener {
    private final RehearsalService service;
    private final Supplier<Map<Integer, InetSocketAddress>> defaults;

    /** @param defaults the cluster's daemons (worker to address) for changes that name none */
    public RehearsalResize(RehearsalService service, Supplier<Map<Integer, InetSocketAddress>> defaults) {
        this.service = service;
        this.defaults = defaults;
    }

    @Override
    public String committed(String job, ParallelConfig config, List<Device> devices,
            Map<Integer, InetSocketAddress> daemons) throws Exception {
        if (!service.mayHold(job)) {
            return null; // a job without a rehearsal buffer: nothing to do, nothing to report
        }
        RehearsalService.Repartitioned r = service.repartition(job, targets(config, devices,
                daemons.isEmpty() ? defaults.get() : daemons));
        if (r.daemons() == 0) {
            return null;
        }
        return "rehearsal buffer re-partitioned over " + r.ranks() + " data-parallel ranks: " + r.representatives()
                + " representatives, " + r.moved() + " moved between daemons";
    }

    @Override
    public String feature() {
        return "rehearsal buffer";
    }

    /** New data-parallel rank to the address of its daemon. */
    static Map<Integer, String> targets(ParallelConfig c, List<Device> devices, Map<Integer, InetSocketAddress> daemons) {
        Map<Integer, String> out = new TreeMap<>();
        for (int d = 0; d < c.dp(); d++) {
            Device dev = devices.get(RankLayout.MEGATRON.rank(new RankLayout.Coord(0, d, 0), c));
            InetSocketAddress a = daemons.get(dev.worker());
            if (a == null) {
                throw new IllegalArgumentException("no daemon address for worker " + dev.worker() + " (data-parallel rank "
                        + d + ")");
            }
            out.put(d, a.getHostString() + ":" + a.getPort());
        }
        return out;
    }
}
