package io.tenplex.server.datasets;

import io.tenplex.datasets.rehearsal.RehearsalPeers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The body of {@code POST /api/v1/jobs/<job>/rehearsal/fetch}, daemon to daemon: {@code int32 count}
 * then per slot {@code int32 rank, int32 class, int32 slot} (little-endian). The answer is a batch of
 * {@link io.tenplex.datasets.rehearsal.Tuples}.
 */
final class SlotWire {
    /** The most slots one fetch names. */
    static final int MAX_SLOTS = 1 << 16;

    private SlotWire() {
    }

    static byte[] request(List<RehearsalPeers.Slot> slots) {
        ByteBuffer b = ByteBuffer.allocate(4 + 12 * slots.size()).order(ByteOrder.LITTLE_ENDIAN).putInt(slots.size());
        slots.forEach(s -> b.putInt(s.rank()).putInt(s.cls()).putInt(s.slot()));
        return b.array();
    }

    /** The slots of a request; 400 unless the body is exactly a count within the limit and its slots. */
    static List<RehearsalPeers.Slot> slots(byte[] body) {
        ByteBuffer in = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        int count = body.length >= 4 ? in.getInt() : -1;
        if (count < 0 || count > MAX_SLOTS || body.length != 4 + 12L * count) {
            throw new IllegalArgumentException("a fetch of " + count + " slots in " + body.length + " bytes (expected: "
                    + "0 to " + MAX_SLOTS + " slots of 12 bytes after the count)");
        }
        List<RehearsalPeers.Slot> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            out.add(new RehearsalPeers.Slot(in.getInt(), in.getInt(), in.getInt()));
        }
        return out;
    }
}
