package io.tenplex.datasets;

import io.tenplex.datasets.adios2.Adios2Sources;
import io.tenplex.datasets.hdf5.ArrayBlock;
import io.tenplex.datasets.hdf5.Hdf5Sources;
import io.tenplex.datasets.netcdf.ClassicSources;
import io.tenplex.ptc.data.DatasetIndex;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * The array sources ({@code hdf5:}, {@code netcdf:} and {@code adios2:} URLs): an {@code adios2:} URL
 * goes to {@link Adios2Sources} (BP4 and BP5), a {@code netcdf:} URL whose file is a NetCDF classic file
 * (CDF-1, CDF-2, CDF-5) to {@link ClassicSources}, every other to {@link Hdf5Sources} (HDF5 and
 * NetCDF-4). Which one serves a URL is decided from its scheme and the file's signature each time a
 * mount checks it, and kept for the reads. Thread-safe.
 */
final class ArraySources implements AutoCloseable {
    /** Which reader serves a URL. */
    private enum Reader { HDF5, CLASSIC, ADIOS2 }

    private final Hdf5Sources hdf5;
    private final ClassicSources classic;
    private final Adios2Sources adios2;
    private final Map<String, Reader> readers = new ConcurrentHashMap<>(); // by URL, as last checked

    /**
     * @param resolve the canonical path of an allowed local file (HDF5, NetCDF), else a refusal
     * @param resolveDirectory the same for a directory (an ADIOS2 {@code .bp} directory)
     * @param cacheBytes the heap bytes of decoded HDF5 blocks kept ({@link Hdf5Sources})
     */
    ArraySources(Function<String, Path> resolve, Function<String, Path> resolveDirectory, long cacheBytes) {
        this.hdf5 = new Hdf5Sources(resolve, cacheBytes);
        this.classic = new ClassicSources(resolve);
        this.adios2 = new Adios2Sources(resolveDirectory);
    }

    /** Opens (again, if the file changed) and checks the array at {@code url}; its size in bytes. */
    long check(String url) {
        return switch (reader(url, true)) {
            case ADIOS2 -> adios2.check(url);
            case CLASSIC -> classic.check(url);
            case HDF5 -> hdf5.check(url);
        };
    }

    /** The index entry of every row of the array at {@code url}, under its canonical URL (see {@link Hdf5Sources#index}). */
    DatasetIndex.File index(String url, LongConsumer heap) {
        Reader r = reader(url, true);
        DatasetIndex.File f = switch (r) {
            case ADIOS2 -> adios2.index(url, heap);
            case CLASSIC -> classic.index(url, heap);
            case HDF5 -> hdf5.index(url, heap);
        };
        readers.put(f.url(), r); // the mount checks and reads it by its canonical URL
        return f;
    }

    /** Fills {@code dst} (exactly its remaining bytes) with the array's bytes from {@code begin}. */
    void read(String url, long begin, ByteBuffer dst) throws IOException {
        switch (readerForReads(url)) {
            case ADIOS2 -> adios2.read(url, begin, dst);
            case CLASSIC -> classic.read(url, begin, dst);
            case HDF5 -> hdf5.read(url, begin, dst);
        }
    }

    /** The decoded block holding byte {@code at}, or null where rows are read one by one (classic, ADIOS2). */
    ArrayBlock block(String url, long at) throws IOException {
        return readerForReads(url) == Reader.HDF5 ? hdf5.block(url, at) : null;
    }

    /** HDF5 blocks decoded so far (for tests and benchmarks). */
    long blocksDecoded() {
        return hdf5.blocksDecoded();
    }

    private Reader reader(String url, boolean recheck) {
        Reader r = recheck ? null : readers.get(url);
        if (r == null) {
            r = adios2.claims(url) ? Reader.ADIOS2 : classic.claims(url) ? Reader.CLASSIC : Reader.HDF5;
            readers.put(url, r);
        }
        return r;
    }

    private Reader readerForReads(String url) throws IOException {
        try {
            return reader(url, false);
        } catch (RuntimeException e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        try (adios2; classic; hdf5) {
            // closed in reverse order, each even if another fails
        }
    }
}
