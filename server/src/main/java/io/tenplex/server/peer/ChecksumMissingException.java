package io.tenplex.server.peer;

import java.io.IOException;

/**
 * A peer answered a read that asked for {@code x-tensor-crc32c} without one (or with one that is not
 * 8 hex digits): the bytes cannot be verified, so they are not used.
 */
public final class ChecksumMissingException extends IOException {
    public ChecksumMissingException(String message) {
        super(message);
    }
}
