package io.tenplex.transform;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** A SHA-256 over a sequence of longs (buffered), naming a plan's choices in 64 hex digits. */
final class PlanDigest {
    private final MessageDigest sha;
    private final ByteBuffer buffer = ByteBuffer.allocate(8192);

    /** @param label hashed first (what is digested, and its version) */
    PlanDigest(String label) {
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
        sha.update(label.getBytes(StandardCharsets.UTF_8));
    }

    PlanDigest add(long v) {
        if (buffer.remaining() < Long.BYTES) {
            flush();
        }
        buffer.putLong(v);
        return this;
    }

    String hex() {
        flush();
        return HexFormat.of().formatHex(sha.digest());
    }

    private void flush() {
        buffer.flip();
        sha.update(buffer);
        buffer.clear();
    }
}
