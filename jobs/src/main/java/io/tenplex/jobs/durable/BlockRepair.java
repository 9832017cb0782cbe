package io.tenplex.jobs.durable;

import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * Where a restore gets a block whose bytes on disk are damaged or missing: a partner's copy (L2,
 * {@link io.tenplex.jobs.tiers.PartnerBlockRepair}) or the rank rebuilt from its group's parity (L3,
 * {@link io.tenplex.jobs.tiers.ParityBlockRepair}). When the repair has no copy ({@link #NONE} never
 * has), the damaged generation is not served and the restore falls back to an older intact one.
 */
public interface BlockRepair {
    /** Repairs nothing. */
    BlockRepair NONE = (generation, rank, path, offset, length, expected) -> Optional.empty();

    /**
     * The {@code length} bytes at {@code offset} of entry {@code path} (relative to the rank's tree) of
     * {@code rank} in the durable generation {@code generation} (one block), whose CRC32C must be
     * {@code expected}; empty when no copy can be had. The restore checks the CRC32C of what it gets.
     */
    Optional<ByteBuffer> repair(DurableManifest generation, int rank, String path, long offset, int length,
            int expected);

    /** The first of {@code repairs} that has a copy, tried in order. */
    static BlockRepair firstOf(BlockRepair... repairs) {
        return (generation, rank, path, offset, length, expected) -> {
            for (BlockRepair r : repairs) {
                Optional<ByteBuffer> got = r.repair(generation, rank, path, offset, length, expected);
                if (got.isPresent()) {
                    return got;
                }
            }
            return Optional.empty();
        };
    }
}
