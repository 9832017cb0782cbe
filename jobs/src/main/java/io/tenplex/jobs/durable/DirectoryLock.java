package io.tenplex.jobs.durable;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The lock a daemon holds on its checkpoint directory while it runs: an OS file lock
 * ({@link FileChannel#tryLock()}, {@code fcntl} on Linux) on {@code DIR/tenplexd.lock}, which the OS
 * releases when the process ends, also by SIGKILL; so a second daemon given the same directory is
 * refused while the first lives, and a daemon started after a crash takes it. The file holds the
 * holder's pid (for the refusal's message only) and is never deleted.
 */
public final class DirectoryLock implements AutoCloseable {
    /** The lock file's name in the checkpoint directory. */
    public static final String FILE = "tenplexd.lock";

    private final FileChannel channel;
    private final FileLock lock;

    private DirectoryLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Takes the lock of {@code dir} (which exists).
     *
     * @throws IllegalArgumentException when another live process holds it (naming the file and the
     *     holder's pid), or when the lock file is not a regular file
     */
    public static DirectoryLock acquire(Path dir) throws IOException {
        Path file = dir.resolve(FILE);
        if (Files.exists(file, LinkOption.NOFOLLOW_LINKS) && !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IllegalArgumentException("--checkpoint-dir " + dir + ": " + file + " is not a regular file; "
                    + "remove it (it is the lock that keeps two daemons out of one directory)");
        }
        FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        try {
            FileLock lock;
            try {
                lock = ch.tryLock();
            } catch (OverlappingFileLockException e) {
                lock = null; // held by a daemon of this same process
            }
            if (lock == null) {
                throw new IllegalArgumentException("--checkpoint-dir " + dir + " is in use by another running tenplexd ("
                        + holder(ch) + " holds the lock on " + file + "); give each daemon its own directory, or name "
                        + SharedDurableDirs.WORKER + " in it on shared storage");
            }
            byte[] me = ("pid " + ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII);
            ch.truncate(0);
            ch.write(ByteBuffer.wrap(me), 0);
            ch.force(false);
            return new DirectoryLock(ch, lock);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    private static String holder(FileChannel ch) {
        try {
            ByteBuffer b = ByteBuffer.allocate(64);
            ch.read(b, 0);
            String s = new String(b.array(), 0, b.position(), StandardCharsets.US_ASCII).strip();
            return s.matches("pid [0-9]{1,19}") ? "the process with " + s : "another process";
        } catch (IOException e) {
            return "another process";
        }
    }

    /** Releases the lock (idempotent); the file stays. */
    @Override
    public void close() throws IOException {
        if (channel.isOpen()) {
            try {
                lock.release();
            } finally {
                channel.close();
            }
        }
    }
}
