package io.tenplex.datasets.format;

import java.io.IOException;
import java.io.InputStream;

/**
 * How the samples of one kind of source file are found. A sample is read as its byte range of the
 * source, as it is (framing and newlines included): a format only decides where each sample begins
 * and ends, so the loaders, the view and the peers treat every format alike. A new format is one
 * class implementing this and one line in {@link SampleFormats}.
 */
public interface SampleFormat {
    /** The name the {@code tenplex dataset index --format} option takes (before any {@code :argument}). */
    String name();

    /**
     * The samples of a source, reading it once from its start.
     *
     * @param in the source's bytes, from byte 0 (borrowed: not closed here)
     * @param size the source's size in bytes
     * @param source names the source in error messages
     * @throws IllegalArgumentException if the source is not of this format or is truncated, naming
     *     the source and the byte where it goes wrong
     */
    Samples find(InputStream in, long size, String source) throws IOException;
}
