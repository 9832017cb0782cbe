package io.tenplex.datasets.adios2;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads a metadata file of an ADIOS2 directory ({@code md.idx}, {@code md.0}, {@code mmd.0}) whole,
 * within a limit, and closes it. Stateless.
 */
final class MetaFiles {
    /** The largest metadata file read. */
    static final long MAX_BYTES = 256L << 20;

    /**
     * The most bytes of metadata ({@code md.idx}, {@code md.0}, {@code mmd.0} together) one directory may
     * have: they are read whole into the heap before they are parsed (one directory at a time), so at
     * most an eighth of the daemon's heap (64 MiB at {@code -Xmx512m}), and never over 256 MiB.
     */
    static long budget() {
        return Math.min(MAX_BYTES, Runtime.getRuntime().maxMemory() / 8);
    }

    /**
     * Refuses the directory before anything is read when its metadata files together exceed {@code budget}
     * (sizes as the file system reports them: a sparse file counts whole).
     */
    static void checkBudget(Path dir, String where, long budget, String... names) {
        long total = 0;
        for (String name : names) {
            try {
                total = Math.addExact(total, Files.size(dir.resolve(name)));
            } catch (IOException e) {
                continue; // missing or unreadable: read() says so
            }
        }
        if (total > budget) {
            throw new IllegalArgumentException(where + ": its metadata files " + String.join(", ", names) + " have "
                    + total + " bytes together, over the " + budget + " this daemon reads for one directory "
                    + "(an eighth of its heap: a larger -Xmx raises it, up to 256 MiB)");
        }
    }

    private MetaFiles() {}

    /** The file {@code name} of directory {@code dir}; {@code where} names the directory in messages. */
    static MetaBytes read(Path dir, String name, String where) {
        String what = where + ": " + name;
        try (FileChannel ch = open(dir.resolve(name))) {
            long size = ch.size();
            if (size > MAX_BYTES) {
                throw new IllegalArgumentException(what + " has " + size + " bytes (limit " + MAX_BYTES + ")");
            }
            ByteBuffer b = ByteBuffer.allocate((int) size);
            while (b.hasRemaining() && ch.read(b) >= 0) {
                // read on
            }
            if (b.hasRemaining()) {
                throw new IllegalArgumentException(what + " shrank while it was read");
            }
            return new MetaBytes(b.array(), what);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(where + " has no " + name + " (is it a BP4 or BP5 directory?)");
        } catch (IOException e) {
            throw new IllegalArgumentException(what + " is not readable (" + e + ")");
        }
    }

    /**
     * Opens a file of the directory for reading: a regular file, not a link (which could lead out of
     * the data root the directory was checked against) nor a FIFO or device (which could block or never end).
     */
    static FileChannel open(Path file) throws IOException {
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new NoSuchFileException(file.toString());
        }
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(file.getFileName() + " is not a regular file (a link, a directory or a device)");
        }
        return FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
    }
}
