package io.tenplex.server;

import io.tenplex.store.memory.Crc32c;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The CRC32C of a body assembled in order from bytes read here ({@link #update}) and from runs whose
 * CRC32C is already known ({@link #append}, e.g. a blob's block checksums), so no byte is read twice.
 * The combination operators are kept per run length: a body of many entries of a few sizes (a tar
 * archive of a checkpoint) pays for each length once.
 */
final class BodyCrc {
    private static final int KEPT_OPERATORS = 64;

    private final CRC32C run = new CRC32C();
    private final Map<Long, int[]> zeros = new HashMap<>();
    private long runLength;
    private int crc;
    private long length;

    /** Adds {@code b}'s remaining bytes (its position does not move). */
    void update(ByteBuffer b) {
        runLength += b.remaining();
        run.update(b.duplicate());
    }

    /** Adds a run of {@code n} bytes whose CRC32C is {@code runCrc}. */
    void append(int runCrc, long n) {
        flush();
        combine(runCrc, n);
    }

    /** The CRC32C of everything added. */
    int value() {
        flush();
        return crc;
    }

    long length() {
        return length + runLength;
    }

    private void flush() {
        if (runLength > 0) {
            long n = runLength;
            runLength = 0;
            combine((int) run.getValue(), n);
            run.reset();
        }
    }

    private void combine(int next, long n) {
        if (n == 0) {
            return;
        }
        int[] op = zeros.get(n);
        if (op == null) {
            op = Crc32c.zeros(n);
            if (zeros.size() < KEPT_OPERATORS) {
                zeros.put(n, op);
            }
        }
        crc = Crc32c.apply(op, crc) ^ next;
        length += n;
    }
}
