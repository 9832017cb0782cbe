package io.tenplex.server.datasets;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The body of {@code POST /api/v1/datasets/<job>/samples}, daemon to daemon: the request is the
 * sample ids (int32 little-endian); the answer has per requested id an int64 little-endian length
 * (-1: not loaded there) followed by that many bytes.
 */
final class SampleWire {
    private SampleWire() {}

    static byte[] request(int[] ids) {
        ByteBuffer b = ByteBuffer.allocate(4 * ids.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int id : ids) {
            b.putInt(id);
        }
        return b.array();
    }

    /** The ids of a request; 400 if the body is not whole int32 values. */
    static int[] ids(byte[] body) {
        if (body.length % 4 != 0) {
            throw new IllegalArgumentException("sample ids must be int32 little-endian (" + body.length + " bytes)");
        }
        ByteBuffer in = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        int[] ids = new int[body.length / 4];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = in.getInt();
        }
        return ids;
    }

    /** The answer: per sample its length and bytes, or -1 where it is null. */
    static byte[] answer(List<ByteBuffer> samples) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        for (ByteBuffer bytes : samples) {
            out.write(len.clear().putLong(bytes == null ? -1 : bytes.remaining()).array(), 0, 8);
            if (bytes != null) {
                byte[] b = new byte[bytes.remaining()];
                bytes.duplicate().get(b);
                out.write(b, 0, b.length);
            }
        }
        return out.toByteArray();
    }

    /**
     * The samples of an answer to a request of {@code count} ids: per id a slice of {@code body}, or
     * null where the peer does not have it or the answer is cut short.
     */
    static List<ByteBuffer> samples(byte[] body, int count) {
        ByteBuffer in = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        List<ByteBuffer> out = new ArrayList<>(count);
        for (int k = 0; k < count; k++) {
            long len = in.remaining() >= 8 ? in.getLong() : -1;
            if (len < 0 || in.remaining() < len) {
                out.add(null);
                continue;
            }
            out.add(in.slice(in.position(), (int) len));
            in.position(in.position() + (int) len);
        }
        return out;
    }
}
