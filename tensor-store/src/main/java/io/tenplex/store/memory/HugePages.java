package io.tenplex.store.memory;

import java.nio.ByteBuffer;

/**
 * Transparent huge pages for large direct buffers: {@code madvise(MADV_HUGEPAGE)} over the 2 MiB
 * pages that lie wholly inside a buffer, through jnr-ffi (the JDK of Java 17 cannot advise a direct
 * buffer). Where the kernel runs transparent huge pages in {@code madvise} mode, memory touched
 * after the advice is mapped in 2 MiB pages: 512 times fewer page-table entries, so the kernel's
 * copy of a socket read into a blob and the checksum pass over it miss the TLB less (see
 * docs/BENCHMARKS.md, Uploads).
 *
 * <p>Pages touched before the advice keep their small pages (the JDK zeroes new direct memory, so a
 * fresh buffer's are all touched) until {@link #drop} gives them back; the next touch then maps
 * huge pages, zero-filled by the kernel. Only pages wholly inside a buffer are advised or dropped,
 * never a byte outside it. Where the calls are unavailable or refused, nothing changes.
 */
public final class HugePages {
    /** The size of a transparent huge page on x86-64 and arm64 (with 4 KiB base pages). */
    public static final int SIZE = 2 << 20;
    static final int MADV_DONTNEED = 4;
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
        try {
            return jnr.ffi.LibraryLoader.create(LibC.class).load("c");
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }

    /**
     * Advises huge pages for the whole 2 MiB pages inside {@code buffer} (a direct buffer), keeping
     * its content; pages already touched keep their small pages.
     *
     * @return the bytes advised (0 when there are none, or when the call is unavailable or refused)
     */
    public static long advise(ByteBuffer buffer) {
        ByteBuffer inside = inside(buffer);
        return inside != null && LIBC.madvise(inside, inside.capacity(), MADV_HUGEPAGE) == 0 ? inside.capacity() : 0;
    }

    /**
     * Gives the memory of the whole 2 MiB pages inside {@code buffer} back to the kernel
     * ({@code MADV_DONTNEED}): <b>their bytes read as zeros afterwards</b>, and once advised they
     * come back as huge pages when next touched. Only for a buffer whose content nothing needs and
     * that nothing else reads or writes meanwhile (a chunk on its way into the pool).
     *
     * @return the bytes dropped (0 when there are none, or when the call is unavailable or refused)
     */
    public static long drop(ByteBuffer buffer) {
        ByteBuffer inside = inside(buffer);
        return inside != null && LIBC.madvise(inside, inside.capacity(), MADV_DONTNEED) == 0 ? inside.capacity() : 0;
    }

    /** Whether the calls are available here. */
    public static boolean available() {
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
