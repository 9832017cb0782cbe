package io.tenplex.client;

import java.util.zip.CRC32C;

/** The daemon's body checksum: CRC32C as 8 lower-case hex digits in {@code x-tensor-crc32c}. */
final class Checksums {
    static final String HEADER = "x-tensor-crc32c";
    static final String WANT_HEADER = "x-want-crc32c";

    private Checksums() {
    }

    static String hex(byte[] body) {
        CRC32C c = new CRC32C();
        c.update(body);
        return String.format("%08x", c.getValue());
    }

    /**
     * Checks a body against the checksum the daemon sent ({@code sent}, may be null).
     *
     * @param required whether one was asked for (then a missing one is a failure too)
     * @throws TenplexException on a mismatch, a malformed value, or a required one missing
     */
    static void verify(String path, String sent, byte[] body, boolean required) {
        if (sent == null) {
            if (required) {
                throw new TenplexException(0, path + ": the daemon sent no " + HEADER + " although it was asked for");
            }
            return;
        }
        String got = hex(body);
        if (!got.equalsIgnoreCase(sent.strip())) {
            throw new TenplexException(0, path + ": checksum mismatch: the daemon sent " + sent.strip() + ", the "
                    + body.length + " bytes received have " + got);
        }
    }
}
