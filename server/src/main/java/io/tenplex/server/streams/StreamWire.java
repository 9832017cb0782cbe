package io.tenplex.server.streams;

import io.tenplex.datasets.streams.Sample;
import io.tenplex.datasets.streams.StreamSpec;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The binary bodies of the stream routes, big-endian. A batch: {@code u32 count, u32 flags (1: the
 * stream has ended for the rank)}, then per sample {@code u32 length, bytes}. Moved samples (a
 * re-partitioning, daemon to daemon): {@code u32 count}, then per sample {@code u32 rank, u32 reads,
 * u64 id, u32 length, bytes}. Every length read is checked against the bytes left and the largest
 * sample before anything is allocated.
 */
final class StreamWire {
    static final int ENDED = 1;
    private static final int MOVED_HEAD = 20;

    private StreamWire() {
    }

    static byte[] batch(List<byte[]> samples, boolean ended) {
        long size = 8;
        for (byte[] s : samples) {
            size += 4L + s.length;
        }
        if (size > Integer.MAX_VALUE - 8) { // never: a batch holds at most StreamService.MAX_BATCH_BYTES
            throw new IllegalStateException("a batch of " + size + " bytes does not fit one message");
        }
        ByteBuffer b = ByteBuffer.allocate((int) size).putInt(samples.size()).putInt(ended ? ENDED : 0);
        samples.forEach(s -> b.putInt(s.length).put(s));
        return b.array();
    }

    static byte[] moved(Map<Integer, List<Sample>> byRank) {
        long size = 4;
        int count = 0;
        for (List<Sample> list : byRank.values()) {
            for (Sample s : list) {
                size += MOVED_HEAD + s.data().length;
                count++;
            }
        }
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("moved samples of " + size + " bytes do not fit one message");
        }
        ByteBuffer b = ByteBuffer.allocate((int) size).putInt(count);
        byRank.forEach((rank, list) -> list.forEach(s -> b.putInt(rank).putInt(s.reads()).putLong(s.id())
                .putInt(s.data().length).put(s.data())));
        return b.array();
    }

    /** @throws IllegalArgumentException a malformed message (counts or lengths past its end) */
    static Map<Integer, List<Sample>> moved(byte[] body) {
        ByteBuffer b = ByteBuffer.wrap(body);
        int count = readCount(b, MOVED_HEAD);
        Map<Integer, List<Sample>> out = new TreeMap<>();
        for (int i = 0; i < count; i++) {
            need(b, MOVED_HEAD, "sample " + i + "'s head");
            int rank = b.getInt();
            int reads = b.getInt();
            long id = b.getLong();
            byte[] data = bytes(b, b.getInt(), i);
            if (rank < 0 || reads < 0) {
                throw new IllegalArgumentException("moved sample " + i + ": rank " + rank + ", reads " + reads
                        + " (expected: >= 0)");
            }
            out.computeIfAbsent(rank, r -> new ArrayList<>()).add(new Sample(id, data, reads));
        }
        return out;
    }

    /** A batch's samples (the client's side of {@link #batch}; used by tests and peers). */
    static List<byte[]> batchSamples(byte[] body) {
        ByteBuffer b = ByteBuffer.wrap(body);
        int count = readCount(b, 4);
        need(b, 4, "flags");
        b.getInt();
        List<byte[]> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            need(b, 4, "sample " + i + "'s length");
            out.add(bytes(b, b.getInt(), i));
        }
        return out;
    }

    private static int readCount(ByteBuffer b, int perSample) {
        need(b, 4, "count");
        int count = b.getInt();
        if (count < 0 || (long) count * perSample > b.remaining()) {
            throw new IllegalArgumentException("sample count " + count + " does not fit the " + b.remaining()
                    + " bytes that follow");
        }
        return count;
    }

    private static byte[] bytes(ByteBuffer b, int length, int i) {
        if (length < 0 || length > StreamSpec.MAX_SAMPLE_BYTES || length > b.remaining()) {
            throw new IllegalArgumentException("sample " + i + " of " + length + " bytes (expected: 0 to "
                    + Math.min(StreamSpec.MAX_SAMPLE_BYTES, b.remaining()) + ")");
        }
        byte[] data = new byte[length];
        b.get(data);
        return data;
    }

    private static void need(ByteBuffer b, int n, String what) {
        if (b.remaining() < n) {
            throw new IllegalArgumentException("message ends before " + what);
        }
    }
}
