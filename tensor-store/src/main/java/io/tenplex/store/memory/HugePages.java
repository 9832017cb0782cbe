package io.tenplex.store.memory;

import java.nio.ByteBuffer;

/**
 * Transparent huge pages for large direct buffers: {@code madvise(MADV_HUGEPAGE)} over the 2 MiB
 * pages that lie wholly inside a buffer, through jnr-ffi (the JDK of Java 17 cannot advise a direct
 * buffer). Where the kernel runs transparent huge pages in {@code madvise} mode, memory touched
 * after the advice is mapped in 2 MiB pages, and memory touched before it (a new direct buffer's,
 * which the JDK zeroes) is collapsed into them in the background by {@code khugepaged}: 512 times
 * fewer page-table entries, so the kernel's copy of a socket read into a blob and the checksum pass
 * over it miss the TLB less (docs/BENCHMARKS.md, Uploads). The advice never changes a byte. Where
 * the call is unavailable or refused, nothing changes.
 */
final class HugePages {
    /** The size of a transparent huge page on x86-64 and arm64 (with 4 KiB base pages). */
    static final int SIZE = 2 << 20;
    static final int MADV_HUGEPAGE = 14;

    /** The C library call used, as jnr-ffi binds it. */
    public interface LibC {
        int madvise(ByteBuffer address, long length, int advice);
    }

    private static final LibC LIBC = load();

    private HugePages() {
    }

    private static LibC load() {
        if (!System.getProperty("os.name", "").startsWith("Linux")) {
            return null;
        }
        try { // failing now, not at the first call (by default jnr-ffi defers a failure to each call)
            return jnr.ffi.LibraryLoader.create(LibC.class).failImmediately().load("c");
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }

    /**
     * Advises huge pages for the whole 2 MiB pages inside {@code buffer} (a direct buffer); its
     * content stays as it is. Pages already touched keep their small pages until {@code khugepaged}
     * collapses them (at its defaults about 16 MiB every 10 s, off the caller's thread).
     *
     * @return the bytes advised (0 when there are none, or when the call is unavailable or refused)
     */
    static long advise(ByteBuffer buffer) {
        ByteBuffer inside = inside(buffer);
        try {
            return inside != null && LIBC.madvise(inside, inside.capacity(), MADV_HUGEPAGE) == 0 ? inside.capacity() : 0;
        } catch (RuntimeException | LinkageError e) { // an advice is never worth failing an allocation
            return 0;
        }
    }

    /** Whether the call is available here. */
    static boolean available() {
        return LIBC != null;
    }

    /** The whole huge pages inside {@code buffer}, as a buffer over them, or null when there are none. */
    static ByteBuffer inside(ByteBuffer buffer) {
        if (LIBC == null || !buffer.isDirect() || buffer.capacity() < SIZE) {
            return null;
        }
        ByteBuffer all = buffer.duplicate().clear();
        ByteBuffer inside = all.alignedSlice(SIZE);
        return inside.capacity() >= SIZE ? inside : null;
    }
}
