package io.tenplex.datasets;

import io.tenplex.datasets.hdf5.Hdf5Sources;
import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.store.StoreException;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.OutOfBudgetException;
import java.io.IOException;
import java.io.StringReader;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Builds a mount from a request: reads and parses its index, checks its sources, partitions it and
 * allocates its shard buffers, holding the heap each step needs from the {@link MountHeap} before
 * the step runs. Nothing is left allocated or reserved when it fails. Blocking (it may fetch the
 * index): never on an event loop.
 */
final class MountFactory {
    private final Allocator allocator;
    private final MountHeap heap;
    private final SourceReader source;

    MountFactory(Allocator allocator, MountHeap heap, SourceReader source) {
        this.allocator = allocator;
        this.heap = heap;
        this.source = source;
    }

    /** The mount of {@code job} that {@code r} asks for, its heap reserved and its shard buffers allocated. */
    DatasetMount build(String job, MountRequest r) {
        String where = r.indexText() != null ? null : r.index();
        MountHeap.Reservation reserved = heap.reserve(0, "the index of dataset mount " + job);
        try {
            DatasetIndex index = where != null && Hdf5Sources.handles(where) ? arrayIndex(where, reserved)
                    : parseIndex(r, where, reserved);
            checkSources(index);
            DataPartition partition = partition(index, r);
            reserved.resize(MountHeap.mount(index, partition, r.servedRanks()));
            return allocate(job, index, partition, r, reserved);
        } catch (RuntimeException e) {
            reserved.close();
            throw e;
        }
    }

    private DatasetIndex parseIndex(MountRequest r, String where, MountHeap.Reservation reserved) {
        String text = where == null ? r.indexText() : source.readIndex(where, reserved::resize);
        reserved.resize(MountHeap.parsing(text.length(), lines(text)));
        return parse(text, where);
    }

    /** The index of every row of an HDF5 dataset or NetCDF variable, its heap reserved first. */
    private DatasetIndex arrayIndex(String where, MountHeap.Reservation reserved) {
        return new DatasetIndex(java.util.List.of(source.arrays().index(where, reserved::resize)));
    }

    private static long lines(String text) {
        long n = 1;
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) == '\n') {
                n++;
            }
        }
        return n;
    }

    /** Every source of the index must be allowed, and local files long enough. */
    private void checkSources(DatasetIndex index) {
        Map<String, Long> ends = new LinkedHashMap<>();
        for (DatasetIndex.File f : index.files()) {
            long end = 0;
            for (long e : f.ends()) {
                end = Math.max(end, e);
            }
            ends.merge(f.url(), end, Math::max);
        }
        ends.forEach(source::check);
    }

    private static DataPartition partition(DatasetIndex index, MountRequest r) {
        try {
            return new DataPartition(index.size(), r.params());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("progress " + r.params().progress() + " is beyond the last epoch this "
                    + "index can count (" + Integer.MAX_VALUE + " epochs)");
        }
    }

    /** The mount, which takes over {@code reserved}. */
    private DatasetMount allocate(String job, DatasetIndex index, DataPartition partition, MountRequest r,
            MountHeap.Reservation reserved) {
        try {
            return new DatasetMount(job, index, partition, r.servedRanks(), allocator, reserved);
        } catch (OutOfBudgetException e) {
            throw new StoreException(StoreException.Kind.INSUFFICIENT_STORAGE,
                    "dataset partition does not fit in the memory budget: " + e.getMessage());
        }
    }

    /** Parses an inline index ({@code where} null: errors show the text) or one read from {@code where}. */
    private static DatasetIndex parse(String text, String where) {
        if (where == null) {
            try {
                return DatasetIndex.read(new StringReader(text));
            } catch (IOException | IllegalArgumentException e) {
                throw new IllegalArgumentException("bad dataset index: " + e.getMessage());
            }
        }
        try {
            return DatasetIndex.read(new StringReader(text));
        } catch (DatasetIndex.FormatException e) {
            // the text came from a file or URL: say where it is wrong, never what it holds
            throw new IllegalArgumentException("dataset index " + where + " is not a valid index (line " + e.line() + ")");
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException("dataset index " + where + " is not a valid index");
        }
    }
}
