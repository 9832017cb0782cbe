package io.tenplex.transform;

import java.io.IOException;

/**
 * Bytes of a piece arrived but cannot be trusted: the checksum asked of the holder did not come, or
 * the bytes do not match it. The executor counts it as a corrupted transfer and reads the piece again,
 * as it does for a checksum mismatch.
 */
public final class CorruptTransferException extends IOException {
    public CorruptTransferException(String message) {
        super(message);
    }
}
