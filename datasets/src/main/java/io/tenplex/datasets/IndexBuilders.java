package io.tenplex.datasets;

import io.tenplex.datasets.format.SampleFormat;
import io.tenplex.datasets.format.SampleFormats;
import io.tenplex.ptc.data.DatasetIndex;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Builds index entries for the built-in sample formats by constant: fixed-size records,
 * {@code .npy} arrays (one sample per row), TFRecord files (one sample per record, framing included
 * so that shard files stay valid TFRecord files) and newline-delimited text (one sample per line,
 * its newline included). Formats by name, new ones included, are in {@link SampleFormats}.
 */
public final class IndexBuilders {
    private IndexBuilders() {}

    /** The built-in formats. */
    public enum Format {
        RECORDS, NPY, TFRECORD, LINES
    }

    /** One index file entry for {@code file} (the URL written is its absolute path). */
    public static DatasetIndex.File build(Path file, Format format, long recordSize) throws IOException {
        SampleFormat f = format == Format.RECORDS ? SampleFormats.records(recordSize)
                : SampleFormats.parse(format.name().toLowerCase(Locale.ROOT));
        return SampleFormats.index(file, f);
    }
}
