package io.tenplex.server;

import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.Crc32c;
import java.util.OptionalInt;

/**
 * A client's {@code x-tensor-crc32c} on an upload (the CRC32C of the request body, 8 hex digits, as
 * the daemon sends on replies), checked against the received bytes before they are published: a
 * mismatch is a 400 and the store is left as it was.
 */
final class UploadChecksum {
    static final UploadChecksum NONE = new UploadChecksum(OptionalInt.empty());

    private final OptionalInt expected;

    private UploadChecksum(OptionalInt expected) {
        this.expected = expected;
    }

    /** The request's checksum (none when absent); a malformed one is a 400. */
    static UploadChecksum of(Exchange ex) {
        String v = ex.header(Downloads.CRC_HEADER);
        if (v == null) {
            return NONE;
        }
        String hex = v.trim();
        if (hex.length() != 8 || !hex.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            throw HttpError.badRequest(Downloads.CRC_HEADER + " must be 8 hex digits (the body's CRC32C)");
        }
        return new UploadChecksum(OptionalInt.of(Integer.parseUnsignedInt(hex, 16)));
    }

    /** Whether the client sent a checksum to check. */
    boolean requested() {
        return expected.isPresent();
    }

    /**
     * Checks a body whose CRC32C ({@code bodyCrc}, over {@code size} bytes) was computed as it
     * arrived; a mismatch is a 400 (the caller frees what it holds).
     */
    void verify(int bodyCrc, long size) {
        if (expected.isPresent() && bodyCrc != expected.getAsInt()) {
            throw mismatch(bodyCrc, size);
        }
    }

    private HttpError mismatch(int body, long size) {
        return HttpError.badRequest("body checksum mismatch: " + Downloads.CRC_HEADER + " is "
                + Crc32c.hex(expected.getAsInt()) + " but the " + size + " bytes received have "
                + "CRC32C " + Crc32c.hex(body) + "; nothing was stored");
    }

    /**
     * Checks the body: {@code prefix} (bytes of the body before the stored data, e.g. a {@code .npy}
     * header; may be empty) followed by the writer's bytes. On a mismatch the writer is closed (its
     * memory freed) and a 400 thrown.
     */
    void verify(BlobWriter w, byte[] prefix, int prefixLength) {
        if (expected.isEmpty()) {
            return;
        }
        int data = w.checksums().range(0, w.size()).orElseThrow();
        int body = prefixLength == 0 ? data : Crc32c.combine(Crc32c.of(java.nio.ByteBuffer.wrap(prefix, 0, prefixLength)),
                data, w.size());
        if (body != expected.getAsInt()) {
            w.close();
            throw mismatch(body, w.size() + prefixLength);
        }
    }
}
