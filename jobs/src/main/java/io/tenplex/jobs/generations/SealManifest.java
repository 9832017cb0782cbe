package io.tenplex.jobs.generations;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;

/**
 * The manifest of one sealed rank, stored pretty-printed at
 * {@code /job/<job>/generations/<step>/manifests/<rank>.json} and answered by a seal: the bytes
 * sealed, and every tensor and file (relative to the rank's tree) with its size and CRC32C.
 */
public record SealManifest(int rank, long step, long bytes, Map<String, Item> tensors, Map<String, Item> files) {

    /** The manifest of the tree at {@code root} in {@code store} as a seal would write it (CRC32C from the store). */
    public static SealManifest describe(io.tenplex.store.TensorStore store, io.tenplex.store.StorePath root, int rank,
            long step) {
        return SealManifests.of(store, root, rank, step);
    }

    /**
     * A sealed tensor or file: {@code dtype} and {@code shape} only for a tensor; {@code crc32c}
     * (8 hex digits) is null when the store does not know it.
     */
    public record Item(@JsonInclude(JsonInclude.Include.NON_NULL) String dtype,
            @JsonInclude(JsonInclude.Include.NON_NULL) List<Long> shape, long size, String crc32c) {
    }
}
