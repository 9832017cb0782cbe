package io.tenplex.datasets.adios2;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The data subfiles {@code data.N} of an ADIOS2 directory, opened when the metadata first name them
 * (to check every block against the file's size) and kept open until {@link #close()}. Thread-safe.
 */
final class DataFiles implements AutoCloseable {
    /** The most subfiles one directory may have open (ADIOS2 writes one per aggregator, usually one per node). */
    static final int MAX_OPEN = 4096;

    private record Open(FileChannel channel, long size) {}

    private final Path dir;
    private final String where;
    private final Map<Integer, Open> open = new HashMap<>();

    /** @param where the directory, for messages */
    DataFiles(Path dir, String where) {
        this.dir = dir;
        this.where = where;
    }

    /** The size of {@code data.<subfile>}, opened now if it was not. */
    synchronized long size(int subfile) {
        return file(subfile).size();
    }

    synchronized FileChannel channel(int subfile) {
        return file(subfile).channel();
    }

    private Open file(int subfile) {
        Open o = open.get(subfile);
        if (o == null) {
            if (open.size() >= MAX_OPEN) {
                throw new IllegalArgumentException(where + ": its metadata name more than " + MAX_OPEN
                        + " data subfiles (data." + subfile + " would be one more)");
            }
            FileChannel ch = null;
            try {
                ch = MetaFiles.open(dir.resolve("data." + subfile));
                o = new Open(ch, ch.size());
            } catch (IOException e) {
                closeQuietly(ch);
                throw new IllegalArgumentException(where + ": data." + subfile + " is missing or not readable ("
                        + e.getMessage() + ")");
            }
            open.put(subfile, o);
        }
        return o;
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // opened for reading: nothing to flush
            }
        }
    }

    @Override
    public synchronized void close() {
        open.values().forEach(o -> closeQuietly(o.channel()));
        open.clear();
    }
}
