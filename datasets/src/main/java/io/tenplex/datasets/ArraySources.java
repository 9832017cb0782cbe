package io.tenplex.datasets;

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
 * The array sources ({@code hdf5:} and {@code netcdf:} URLs): a {@code netcdf:} URL whose file is
 * a NetCDF classic file (CDF-1, CDF-2, CDF-5) goes to {@link ClassicSources}, every other to
 * {@link Hdf5Sources} (HDF5 and NetCDF-4). Which one serves a URL is decided from the file's
 * signature each time a mount checks it, and kept for the reads. Thread-safe.
 */
final class ArraySources implements AutoCloseable {
    private final Hdf5Sources hdf5;
    private final ClassicSources classic;
    private final Map<String, Boolean> isClassic = new ConcurrentHashMap<>(); // by URL, as last checked

    /** @param cacheBytes the heap bytes of decoded HDF5 blocks kept ({@link Hdf5Sources}) */
    ArraySources(Function<String, Path> resolve, long cacheBytes) {
        this.hdf5 = new Hdf5Sources(resolve, cacheBytes);
        this.classic = new ClassicSources(resolve);
    }

    /** Opens (again, if the file changed) and checks the array at {@code url}; its size in bytes. */
    long check(String url) {
        return classic(url, true) ? classic.check(url) : hdf5.check(url);
    }

    /** The index entry of every row of the array at {@code url}, under its canonical URL (see {@link Hdf5Sources#index}). */
    DatasetIndex.File index(String url, LongConsumer heap) {
        DatasetIndex.File f = classic(url, true) ? classic.index(url, heap) : hdf5.index(url, heap);
        isClassic.put(f.url(), isClassic.get(url)); // the mount checks and reads it by its canonical URL
        return f;
    }

    /** Fills {@code dst} (exactly its remaining bytes) with the array's bytes from {@code begin}. */
    void read(String url, long begin, ByteBuffer dst) throws IOException {
        if (classicForReads(url)) {
            classic.read(url, begin, dst);
        } else {
            hdf5.read(url, begin, dst);
        }
    }

    /** The decoded block holding byte {@code at}, or null where rows are read one by one (a classic variable). */
    ArrayBlock block(String url, long at) throws IOException {
        return classicForReads(url) ? null : hdf5.block(url, at);
    }

    /** HDF5 blocks decoded so far (for tests and benchmarks). */
    long blocksDecoded() {
        return hdf5.blocksDecoded();
    }

    private boolean classic(String url, boolean recheck) {
        Boolean c = recheck ? null : isClassic.get(url);
        if (c == null) {
            c = classic.claims(url);
            isClassic.put(url, c);
        }
        return c;
    }

    private boolean classicForReads(String url) throws IOException {
        try {
            return classic(url, false);
        } catch (RuntimeException e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        try {
            classic.close();
        } finally {
            hdf5.close();
        }
    }
}
