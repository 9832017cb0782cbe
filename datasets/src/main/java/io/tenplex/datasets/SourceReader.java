package io.tenplex.datasets;

import io.tenplex.datasets.hdf5.ArrayBlock;
import io.tenplex.datasets.hdf5.Hdf5Sources;
import io.tenplex.store.StoreException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reads dataset sources where the index says they live, within the {@link SourcePolicy}: a local
 * path or {@code file://} URL below a data root, or an {@code http(s)://} URL on an allowed host (one
 * range GET per read, with timeouts), or an HDF5 dataset or NetCDF variable ({@code hdf5:} or
 * {@code netcdf:} URL, a local file below a data root, {@link ArraySources}). Blocking: call it from worker threads only. Thread-safe; close
 * it to close the files.
 */
final class SourceReader implements AutoCloseable {
    /** The largest index read from a file or URL (an inline index is bounded by the request size). */
    static final int MAX_INDEX_BYTES = 64 << 20;

    private final SourcePolicy policy;
    private final SourceFetch fetch;
    private final Map<Path, FileChannel> files = new ConcurrentHashMap<>();
    private final Map<String, Path> checked = new ConcurrentHashMap<>(); // local source -> its allowed real path
    private final ArraySources arrays;

    SourceReader(SourcePolicy policy) {
        this(policy, Hdf5Sources.CACHE_BYTES);
    }

    /** @param arrayCacheBytes the heap bytes of decoded HDF5 array blocks kept ({@link Hdf5Sources}) */
    SourceReader(SourcePolicy policy, long arrayCacheBytes) {
        this.policy = policy;
        this.fetch = new SourceFetch(policy);
        this.arrays = new ArraySources(policy::localSource, policy::localDirectory, arrayCacheBytes);
    }

    /** The HDF5 and NetCDF sources ({@code hdf5:} and {@code netcdf:} URLs). */
    ArraySources arrays() {
        return arrays;
    }

    SourcePolicy policy() {
        return policy;
    }

    static boolean isHttp(String url) {
        return url.startsWith("http://") || url.startsWith("https://");
    }

    /**
     * The text of an index at {@code where}; 403 if the policy refuses it, 502/504 if the URL fails.
     *
     * @param held told the heap the read holds before it grows (it may throw to stop the read)
     */
    String readIndex(String where, java.util.function.LongConsumer held) {
        if (isHttp(where)) {
            byte[] bytes = fetch.getAll(policy.httpSource(where), MAX_INDEX_BYTES, held);
            held.accept(2L * bytes.length); // the bytes and their text
            return new String(bytes, StandardCharsets.UTF_8);
        }
        Path p = policy.localSource(where);
        try {
            long size = Files.size(p);
            if (size > MAX_INDEX_BYTES) {
                throw new StoreException(StoreException.Kind.TOO_LARGE, "dataset index " + where + " has " + size
                        + " bytes (limit " + MAX_INDEX_BYTES + ")");
            }
            held.accept(2 * size); // the bytes and their text
            return Files.readString(p, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException("dataset index " + where + " is not readable text ("
                    + e.getClass().getSimpleName() + ")");
        }
    }

    /**
     * Checks that a source is allowed and, for a local file, that it holds at least {@code end} bytes
     * (an HTTP source is only checked against the allowed hosts).
     */
    void check(String url, long end) {
        if (Hdf5Sources.handles(url)) {
            long size = arrays.check(url);
            if (size < end) {
                throw new IllegalArgumentException("array source " + url + " has " + size
                        + " bytes but the index reads up to " + end);
            }
            return;
        }
        if (isHttp(url)) {
            policy.httpSource(url);
            return;
        }
        Path p = policy.localSource(url);
        checked.put(url, p);
        long size;
        try {
            size = Files.size(p);
        } catch (IOException e) {
            throw new IllegalArgumentException("dataset file " + url + " is not readable");
        }
        if (size < end) {
            throw new IllegalArgumentException("dataset file " + url + " has " + size + " bytes but the index reads up to "
                    + end);
        }
    }

    /** Fills {@code dst} (exactly its remaining bytes) from {@code url} starting at {@code begin}. */
    void read(String url, long begin, ByteBuffer dst) throws IOException {
        if (!dst.hasRemaining()) {
            return;
        }
        if (isHttp(url)) {
            fetch.getRange(policy.httpSource(url), begin, dst);
            return;
        }
        if (Hdf5Sources.handles(url)) {
            arrays.read(url, begin, dst);
            return;
        }
        FileChannel ch = channel(checked.computeIfAbsent(url, policy::localSource));
        long pos = begin;
        while (dst.hasRemaining()) {
            int n = ch.read(dst, pos);
            if (n < 0) {
                throw new IOException(url + " ends before byte " + pos);
            }
            pos += n;
        }
    }

    /**
     * The block of {@code url} decoded together with byte {@code at} (an array source's chunk of
     * rows), or null if the source is not decoded in blocks (files, HTTP, contiguous arrays): then
     * its samples are read one by one with {@link #read}.
     */
    ArrayBlock block(String url, long at) throws IOException {
        return Hdf5Sources.handles(url) ? arrays.block(url, at) : null;
    }

    private FileChannel channel(Path real) throws IOException {
        FileChannel ch = files.get(real);
        if (ch == null) {
            FileChannel opened = FileChannel.open(real, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
            ch = files.putIfAbsent(real, opened);
            if (ch == null) {
                ch = opened;
            } else {
                opened.close();
            }
        }
        return ch;
    }

    @Override
    public void close() {
        for (FileChannel ch : files.values()) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // read-only files: nothing to flush
            }
        }
        files.clear();
        arrays.close();
    }
}
