package io.tenplex.jobs.durable;

import java.io.IOException;

/**
 * Whether a failed write ran out of room: {@code ENOSPC} (no space left on the device) or
 * {@code EDQUOT} (a quota). The JDK reports both as a plain {@link IOException} whose message is the
 * C library's text for the errno, with no kind to map, so this is the one place that reads it.
 */
public final class DiskFull {
    private static final String[] TEXTS = {"No space left on device", "Disk quota exceeded"};

    private DiskFull() {
    }

    /** Whether {@code t} or one of its causes is an {@link IOException} for a full disk or quota. */
    public static boolean is(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof IOException && c.getMessage() != null) {
                for (String text : TEXTS) {
                    if (c.getMessage().contains(text)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }
}
