package io.tenplex.store;

import io.tenplex.ptc.TensorMeta;

/**
 * A snapshot of one namespace entry for listings and stat.
 *
 * @param meta the tensor's metadata, null unless {@code type == TENSOR}
 * @param size bytes of data (0 for directories; the child count is {@code children})
 * @param writtenMillis when the entry was written (epoch milliseconds; 0 when unknown)
 */
public record Entry(StorePath path, EntryType type, long size, TensorMeta meta, int children, long writtenMillis) {
    /** An entry whose time is not known. */
    public Entry(StorePath path, EntryType type, long size, TensorMeta meta, int children) {
        this(path, type, size, meta, children, 0);
    }

    public String name() {
        return path.name();
    }
}
