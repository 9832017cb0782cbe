package io.tenplex.store.memory;

import java.io.IOException;

/**
 * Sealed memory files ({@code memfd_create(2)}) through jnr-ffi: made at a fixed size, every page
 * allocated up front ({@code posix_fallocate}), then sealed so that no process can shrink or grow
 * them ({@code F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL}). A mapping of such a file never faults
 * past its end and never meets a page the file system cannot provide, so no other process (a client
 * that truncates it, a full tmpfs) can make the daemon's accesses fail with {@code SIGBUS}.
 *
 * <p>The JDK of Java 17 has none of these calls; docs/DECISIONS.md says why jnr-ffi does them.
 */
final class MemFd {
    static final int MFD_CLOEXEC = 1;
    static final int MFD_ALLOW_SEALING = 2;
    static final int F_ADD_SEALS = 1033;
    static final int F_GET_SEALS = 1034;
    static final int F_SEAL_SEAL = 1;
    static final int F_SEAL_SHRINK = 2;
    static final int F_SEAL_GROW = 4;
    /** The seals every segment carries. */
    static final int SEALS = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW;
    private static final int EINTR = 4;
    private static final int ENFILE = 23;
    private static final int EMFILE = 24;
    private static final int ENOMEM = 12;
    private static final int EFBIG = 27;
    private static final int ENOSPC = 28;

    /** The C library calls used, as jnr-ffi binds them. */
    public interface LibC {
        int memfd_create(String name, int flags);

        int ftruncate(int fd, long length);

        int posix_fallocate(int fd, long offset, long length);

        int fcntl(int fd, int cmd, int arg);

        int close(int fd);

        String strerror(int errno);
    }

    private static final LibC LIBC;
    private static final jnr.ffi.Runtime RUNTIME;
    private static final String UNAVAILABLE;

    static {
        LibC lib = null;
        jnr.ffi.Runtime rt = null;
        String why = null;
        try {
            lib = jnr.ffi.LibraryLoader.create(LibC.class).load("c");
            rt = jnr.ffi.Runtime.getRuntime(lib);
        } catch (RuntimeException | LinkageError e) {
            why = e.toString();
        }
        LIBC = lib;
        RUNTIME = rt;
        UNAVAILABLE = why;
    }

    private MemFd() {
    }

    /**
     * A new memory file of {@code size} bytes, every page allocated, sealed against size changes;
     * its descriptor, owned by the caller ({@link #close}).
     *
     * @throws OutOfBudgetException when the system cannot provide the bytes now (ENOSPC, ENOMEM, EFBIG),
     *     or the descriptor that holds them (EMFILE, ENFILE: every segment is a file the daemon holds open)
     * @throws IOException when memory files cannot be made here at all
     */
    static int create(String name, long size) throws IOException {
        LibC c = lib();
        int fd = c.memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) {
            int err = errno();
            if (err == EMFILE || err == ENFILE) {
                throw new OutOfBudgetException("cannot open a shared-memory segment of " + size + " bytes: memfd_create: "
                        + error(err) + " (the daemon holds a descriptor per segment; save over REST, or end "
                        + "reservations and pins)", true);
            }
            throw new IOException("memfd_create: " + error(err));
        }
        try {
            int sized = c.ftruncate(fd, size) == 0 ? 0 : errno();
            check(sized, "cannot size a shared-memory segment to " + size + " bytes");
            int err;
            do {
                err = c.posix_fallocate(fd, 0, size);
            } while (err == EINTR);
            check(err, "cannot allocate " + size + " bytes of shared memory");
            if (c.fcntl(fd, F_ADD_SEALS, SEALS) != 0) {
                throw new IOException("cannot seal a shared-memory segment: " + error(errno()));
            }
            return fd;
        } catch (IOException | RuntimeException e) {
            c.close(fd);
            throw e;
        }
    }

    /** The seals of {@code fd}. */
    static int seals(int fd) throws IOException {
        int s = lib().fcntl(fd, F_GET_SEALS, 0);
        if (s < 0) {
            throw new IOException("fcntl(F_GET_SEALS): " + error(errno()));
        }
        return s;
    }

    static void close(int fd) {
        if (LIBC != null) {
            LIBC.close(fd);
        }
    }

    /** Whether memory files can be made here; null when they can, else why not. */
    static String unavailable() {
        return UNAVAILABLE;
    }

    private static LibC lib() throws IOException {
        if (LIBC == null) {
            throw new IOException("no C library calls for shared memory: " + UNAVAILABLE);
        }
        return LIBC;
    }

    private static int errno() {
        return RUNTIME.getLastError();
    }

    private static String error(int errno) {
        return LIBC.strerror(errno) + " (errno " + errno + ")";
    }

    /** Nothing when {@code errno} is 0; else a refusal the client can retry (507) or an I/O error. */
    private static void check(int errno, String what) throws IOException {
        if (errno == 0) {
            return;
        }
        if (errno == ENOSPC || errno == ENOMEM || errno == EFBIG) {
            throw new OutOfBudgetException(what + ": " + error(errno)
                    + " (the system has no room for it now; save over REST or free memory)", true);
        }
        throw new IOException(what + ": " + error(errno));
    }
}
