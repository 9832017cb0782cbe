package io.tenplex.store;

import io.tenplex.ptc.TensorMeta;

/**
 * A snapshot of one namespace entry for listings and stat.
 *
 * @param meta the tensor's metadata, null unless {@code type == TENSOR}
 * @param size bytes of data (0 for directories; the child count is {@code children})
 */
public record Entry(StorePath path, EntryType type, long size, TensorMeta meta, int children) {
    public String name() {
        return path.name();
    }
}
