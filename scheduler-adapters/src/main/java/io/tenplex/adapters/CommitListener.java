package io.tenplex.adapters;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;

/**
 * Told when a resource change has committed the job's state under its new configuration, before the
 * change reports done (so before the scheduler relaunches the ranks): other per-rank state of the
 * job (e.g. streamed-sample buffers) follows the new data parallelism here. Runs on the change's
 * background thread; an exception is recorded as an event of the change (naming the {@link #feature()}),
 * which still succeeds. A listener of a feature the job does not use does nothing and returns null.
 */
@FunctionalInterface
public interface CommitListener {
    /**
     * @param devices the job's devices, index = global rank
     * @param daemons the daemon of each worker the change named (empty: the daemon's default peers)
     * @return a line for the change's events, or null
     */
    String committed(String job, ParallelConfig config, List<Device> devices, Map<Integer, InetSocketAddress> daemons)
            throws Exception;

    /** What follows the commit here, for the event of a failure (e.g. "streamed-sample buffers"). */
    default String feature() {
        return getClass().getSimpleName();
    }
}
