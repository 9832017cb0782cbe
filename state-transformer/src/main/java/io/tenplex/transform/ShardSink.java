package io.tenplex.transform;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import java.nio.ByteBuffer;

/** Port: where a destination's new shards are assembled (a staging area). */
public interface ShardSink {
    /**
     * A zero-filled buffer of {@code bytes} for the new shard {@code key} of {@code rank}; the
     * executor writes pieces into disjoint parts of it, possibly from several threads.
     */
    ByteBuffer open(int rank, String key, Shape shape, DType dtype);

    /**
     * As {@link #open(int, String, Shape, DType)}; {@code tiled}: the shard's pieces write every one of
     * its bytes (it has no padding), so the buffer need not be zeroed.
     */
    default ByteBuffer open(int rank, String key, Shape shape, DType dtype, boolean tiled) {
        return open(rank, key, shape, dtype);
    }

    /**
     * The sizes in bytes of the shards that will be opened next, in the order they will be opened
     * (called once per run, before the first open): a sink may take its memory for all of them at once.
     */
    default void expect(long[] sizes) {
    }

    /** The new shard is the source rank's old shard unchanged (a keep): alias it, copy nothing. */
    void keep(int rank, String key, int sourceRank, String sourceKey);

    /** Every piece of the shard has been written and verified. */
    void complete(int rank, String key);

    /**
     * Whether this sink can give a new shard the bytes of another new shard of the same part
     * ({@link #alias}): the executor then assembles a shard that several ranks of one worker need
     * (data-parallel replicas) once.
     */
    default boolean aliases() {
        return false;
    }

    /**
     * The new shard {@code key} of {@code rank} has exactly the bytes of the completed new shard
     * {@code fromKey} of {@code fromRank}: share them (read-only), copy nothing.
     */
    default void alias(int rank, String key, int fromRank, String fromKey) {
        throw new UnsupportedOperationException("this sink does not alias shards");
    }
}
