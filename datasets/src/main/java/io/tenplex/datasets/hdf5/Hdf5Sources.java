package io.tenplex.datasets.hdf5;

import io.jhdf.HdfFile;
import io.tenplex.ptc.data.DatasetIndex;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * The array sources of a daemon ({@link ArrayUrl}): opens HDF5 and NetCDF-4 files where the
 * operator allows local sources, checks a dataset when a mount names it (a bad file or name is an
 * {@link IllegalArgumentException}, a 400, and nothing stays open for it), builds the index of its
 * rows and reads byte ranges of it for the loaders. Files stay open until {@link #close()}; a file
 * changed on disk since it was opened is opened again by the next mount. Thread-safe.
 */
public final class Hdf5Sources implements AutoCloseable {
    /** Heap bytes of decoded blocks kept for all arrays together. */
    public static final long CACHE_BYTES = 64L << 20;
    private static final byte[] HDF5_MAGIC = {(byte) 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

    static {
        BoundedFilters.install(); // jHDF's decoders are unbounded, its Fletcher-32 filter checks nothing
    }

    private final BlockCache cache;
    private final OpenArrayFiles<HdfFile, Hdf5Array> files;

    /**
     * @param resolve the canonical path of an allowed local source, or a refusal (403) or an
     *     {@link IllegalArgumentException} (400)
     */
    public Hdf5Sources(Function<String, Path> resolve) {
        this(resolve, CACHE_BYTES);
    }

    /**
     * @param resolve as above
     * @param cacheBytes the heap bytes of decoded blocks kept for all arrays together
     */
    public Hdf5Sources(Function<String, Path> resolve, long cacheBytes) {
        this.cache = new BlockCache(cacheBytes);
        this.files = new OpenArrayFiles<>(resolve, Hdf5Sources::openHdf, this::array, HdfFile::close, cache::drop);
    }

    /** True for the array sources' URLs ({@code hdf5:}, {@code netcdf:}, {@code adios2:}; see {@link ArrayUrl}). */
    public static boolean handles(String url) {
        return ArrayUrl.handles(url);
    }

    /** Opens (again, if the file changed) and checks the array at {@code url}; its size in bytes. */
    public long check(String url) {
        return open(url, true).bytes();
    }

    /**
     * The index entry of every row of the array at {@code url} (checked as {@link #check} does),
     * under its canonical URL.
     *
     * @param heap told the heap the entry takes before it is allocated (it may throw to refuse)
     */
    public DatasetIndex.File index(String url, LongConsumer heap) {
        Hdf5Array a = open(url, true);
        int rows = (int) a.rows();
        heap.accept(16L * rows + 256);
        return DatasetIndex.File.ofRows(a.url.toString(), rows, a.rowBytes());
    }

    /** Fills {@code dst} (exactly its remaining bytes) with the array's bytes from {@code begin}. */
    public void read(String url, long begin, ByteBuffer dst) throws IOException {
        files.read(url, a -> {
            a.read(begin, dst);
            return null;
        });
    }

    /**
     * The decoded block of the array at {@code url} that holds byte {@code at} (its rows decoded
     * together), or null if the array is not read in blocks (a contiguous one).
     */
    public ArrayBlock block(String url, long at) throws IOException {
        return files.read(url, a -> a.blockAt(at));
    }

    private Hdf5Array open(String url, boolean recheck) {
        return files.open(url, recheck);
    }

    private Hdf5Array array(ArrayUrl u, String key, HdfFile file, long size) {
        try {
            return Hdf5Array.open(u, file, size, cache);
        } catch (RuntimeException e) {
            throw e instanceof IllegalArgumentException ? e : new IllegalArgumentException(u.what()
                    + " cannot be read (" + e.getClass().getSimpleName() + ")");
        }
    }

    private static HdfFile openHdf(ArrayUrl u, Path p, long size) {
        checkMagic(u, p);
        HdfFile h;
        try {
            h = new HdfFile(p);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(u.file() + " is not a readable HDF5 file (" + e.getClass().getSimpleName()
                    + ")");
        }
        long end = h.getUserBlockSize() + h.getHdfBackingStorage().getSuperblock().getEndOfFileAddress();
        if (end > size) {
            h.close();
            throw new IllegalArgumentException(u.file() + " is truncated: it has " + size + " bytes, its superblock says "
                    + end);
        }
        return h;
    }

    private static void checkMagic(ArrayUrl u, Path p) {
        byte[] head = new byte[8];
        try (InputStream in = Files.newInputStream(p)) {
            int n = in.readNBytes(head, 0, 8);
            if (n >= 3 && head[0] == 'C' && head[1] == 'D' && head[2] == 'F') {
                throw new IllegalArgumentException(u.file() + " is a NetCDF classic file, not HDF5: name its variable as "
                        + "netcdf://" + u.file() + "#<variable>");
            }
        } catch (IOException e) {
            throw new IllegalArgumentException(u.file() + " is not readable");
        }
        if (!java.util.Arrays.equals(head, HDF5_MAGIC) && !hasUserBlock(p)) {
            throw new IllegalArgumentException(u.file() + " is not an HDF5 file (no HDF5 signature)");
        }
    }

    /** HDF5 files with a user block have the signature at 512, 1024, ...: leave those to jHDF. */
    private static boolean hasUserBlock(Path p) {
        try {
            return Files.size(p) > 512;
        } catch (IOException e) {
            return false;
        }
    }

    /** Blocks decoded so far, over all arrays (for tests and benchmarks). */
    public long blocksDecoded() {
        return cache.decoded();
    }

    @Override
    public void close() {
        files.close();
    }
}
