package io.tenplex.datasets.format;

import java.io.InputStream;

/** {@code records:<bytes>}: one sample per fixed-size record; the source's size must be a multiple. */
final class RecordFormat implements SampleFormat {
    static final String NAME = "records";

    private final long recordSize;

    RecordFormat(long recordSize) {
        if (recordSize < 1) {
            throw new IllegalArgumentException("record size " + recordSize + " (expected: >= 1)");
        }
        this.recordSize = recordSize;
    }

    /** The format of {@code records:<bytes>}, given the text after the colon (null without one). */
    static RecordFormat of(String argument) {
        try {
            return new RecordFormat(Long.parseLong(argument == null ? "" : argument));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("records needs a size: --format records:<bytes>");
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Samples find(InputStream in, long size, String source) {
        if (size % recordSize != 0) {
            throw new IllegalArgumentException(source + " has " + size + " bytes, not a multiple of the record size "
                    + recordSize);
        }
        return Samples.fixed(0, recordSize, Math.toIntExact(size / recordSize));
    }
}
