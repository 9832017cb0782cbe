package io.tenplex.datasets;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * How a mount's loader asks other daemons for samples they hold loaded (their current or previous
 * mount of the same job), so that a remount does not read the source again. The wire protocol lives
 * with the implementation; calls block, on loader threads only.
 */
public interface ShardPeers {
    /** Peers that never have samples (a daemon on its own, or tests). */
    ShardPeers NONE = (peer, job, ids) -> null;

    /**
     * The bytes of samples {@code ids} of {@code job} that {@code peer} holds loaded.
     *
     * @return one entry per id, in order: its bytes, or null where the peer does not have it; null
     *     if the peer could not be asked (unreachable, no mount of the job): the loader reads elsewhere
     */
    List<ByteBuffer> fetch(String peer, String job, int[] ids);
}
