package io.tenplex.jobs.durable;

import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * Where a restore gets a block whose bytes on disk are damaged or missing: a partner's copy (L2) or
 * a rebuild from parity (L3). None is wired yet ({@link #NONE}): a damaged generation is not served
 * and the restore falls back to an older intact one.
 */
public interface BlockRepair {
    /** Repairs nothing. */
    BlockRepair NONE = (job, step, rank, path, block, expected) -> Optional.empty();

    /**
     * The bytes of block {@code block} of entry {@code path} of {@code rank} in generation {@code step},
     * whose CRC32C must be {@code expected}; empty when no copy can be had. The restore checks the
     * CRC32C of what it gets.
     */
    Optional<ByteBuffer> repair(String job, long step, int rank, String path, int block, int expected);
}
