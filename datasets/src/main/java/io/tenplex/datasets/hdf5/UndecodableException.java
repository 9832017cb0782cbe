package io.tenplex.datasets.hdf5;

import java.io.IOException;

/**
 * Rows of an array source that cannot be decoded from the file as it is (a corrupt chunk: a bad
 * deflate stream, a Fletcher-32 checksum that does not match, a malformed chunk index): reading them
 * again fails the same way, so a loader gives them up instead of retrying. A failure to read the
 * file itself (an I/O error) is a plain {@link IOException}, which may pass.
 */
public final class UndecodableException extends IOException {
    /** @param message what cannot be decoded, naming the file, the dataset and the rows or chunk */
    public UndecodableException(String message, Throwable cause) {
        super(message, cause);
    }
}
