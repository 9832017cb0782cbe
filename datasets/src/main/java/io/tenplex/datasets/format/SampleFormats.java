package io.tenplex.datasets.format;

import io.tenplex.ptc.data.DatasetIndex;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * The sample formats by name, and the index entry of a file in one of them. A format is named
 * {@code name} or {@code name:argument} ({@code records:<bytes>}).
 */
public final class SampleFormats {
    /** Each format's name, usage and how it is made from the text after the colon (null without one). */
    private static final Map<String, Function<String, SampleFormat>> FORMATS = new LinkedHashMap<>();
    private static final Map<String, String> USAGE = new LinkedHashMap<>();

    static {
        register(RecordFormat.NAME, "records:<bytes>", RecordFormat::of);
        register(NpyRowFormat.NAME, "npy", a -> new NpyRowFormat());
        register(TfRecordFormat.NAME, "tfrecord", a -> new TfRecordFormat());
        register(LineFormat.NAME, "lines", a -> new LineFormat());
    }

    private SampleFormats() {}

    private static void register(String name, String usage, Function<String, SampleFormat> make) {
        FORMATS.put(name, make);
        USAGE.put(name, usage);
    }

    /** The formats as the CLI takes them, e.g. {@code records:<bytes>, npy, tfrecord, lines}. */
    public static String usage() {
        return String.join(", ", USAGE.values());
    }

    /**
     * The format {@code spec} names ({@code name} or {@code name:argument}, the name in any case).
     *
     * @throws IllegalArgumentException for an unknown name or a bad argument
     */
    public static SampleFormat parse(String spec) {
        String[] f = spec.split(":", 2);
        Function<String, SampleFormat> make = FORMATS.get(f[0].toLowerCase(Locale.ROOT));
        if (make == null) {
            throw new IllegalArgumentException("unknown format '" + spec + "' (" + usage() + ")");
        }
        return make.apply(f.length > 1 ? f[1] : null);
    }

    /** The built-in fixed-size record format. */
    public static SampleFormat records(long recordSize) {
        return new RecordFormat(recordSize);
    }

    /** One index file entry for {@code file} in {@code format} (the URL written is its absolute path). */
    public static DatasetIndex.File index(Path file, SampleFormat format) throws IOException {
        long size = Files.size(file);
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            Samples s = format.find(in, size, file.toString());
            return new DatasetIndex.File(file.toAbsolutePath().toString(), s.begins(), s.ends());
        }
    }
}
