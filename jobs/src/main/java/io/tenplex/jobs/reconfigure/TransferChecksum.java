package io.tenplex.jobs.reconfigure;

import java.util.zip.CRC32C;

/** Checks bytes fetched whole from another daemon against the {@code x-tensor-crc32c} it sent. */
final class TransferChecksum {
    private TransferChecksum() {
    }

    /**
     * Why {@code body} cannot be trusted, or null when it matches. A checksum that was asked for and
     * is missing (or is not 8 hex digits) is a failure, as is a mismatch.
     */
    static String problem(String header, byte[] body) {
        if (header == null || header.length() != 8) {
            return "answered without a valid x-tensor-crc32c although one was asked for";
        }
        int vouched;
        try {
            vouched = Integer.parseUnsignedInt(header, 16);
        } catch (NumberFormatException e) {
            return "answered without a valid x-tensor-crc32c although one was asked for";
        }
        CRC32C c = new CRC32C();
        c.update(body);
        return (int) c.getValue() == vouched ? null : "checksum mismatch (x-tensor-crc32c " + header + ")";
    }
}
