package io.tenplex.jobs.durable;

import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * Where a restore gets a block whose bytes on disk are damaged or missing: a partner's copy (L2,
 * {@link io.tenplex.jobs.tiers.PartnerBlockRepair}); rebuilding from parity (L3) is not wired. When the
 * repair has no copy ({@link #NONE} never has), the damaged generation is not served and the restore
 * falls back to an older intact one.
 */
public interface BlockRepair {
    /** Repairs nothing. */
    BlockRepair NONE = (job, step, rank, path, offset, length, expected) -> Optional.empty();

    /**
     * The {@code length} bytes at {@code offset} of entry {@code path} (relative to the rank's tree) of
     * {@code rank} in generation {@code step} (one block), whose CRC32C must be {@code expected}; empty
     * when no copy can be had. The restore checks the CRC32C of what it gets.
     */
    Optional<ByteBuffer> repair(String job, long step, int rank, String path, long offset, int length, int expected);
}
