package io.tenplex.jobs.generations;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.store.DataRef;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalInt;
import java.util.stream.LongStream;

/** Seal manifests: describing a rank's tree as one, reading a sealed rank's back, comparing a save with it. */
final class SealManifests {
    private static final ObjectMapper JSON = new ObjectMapper();

    private SealManifests() {
    }

    /** The manifest of the tree at {@code root}: every tensor and file with its size and CRC32C. */
    static SealManifest of(TensorStore store, StorePath root, int rank, long step) {
        Map<String, SealManifest.Item> tensors = new LinkedHashMap<>();
        Map<String, SealManifest.Item> files = new LinkedHashMap<>();
        long bytes = 0;
        for (Entry e : store.walk(root, false)) {
            String rel = e.path().toString().substring(root.toString().length() + 1);
            boolean tensor = e.type() == EntryType.TENSOR;
            try (DataRef ref = store.open(e.path())) {
                OptionalInt crc = ref.crc32c(0, ref.size());
                (tensor ? tensors : files).put(rel, new SealManifest.Item(tensor ? e.meta().dtype().wireName() : null,
                        tensor ? LongStream.of(e.meta().shape().dims()).boxed().toList() : null, ref.size(),
                        crc.isPresent() ? Crc32c.hex(crc.getAsInt()) : null));
            }
            bytes += e.size();
        }
        return new SealManifest(rank, step, bytes, tensors, files);
    }

    /**
     * The manifest of a sealed rank.
     *
     * @throws StoreException conflict when it is missing or unreadable (the seal cannot be checked)
     */
    static SealManifest read(TensorStore store, StorePath manifest, String job, long step, int rank) {
        String text = SmallFiles.read(store, manifest).orElseThrow(() -> StoreException.conflict("rank " + rank
                + " of generation " + step + " of job " + job + " is sealed, but its manifest " + manifest
                + " is missing; the generation cannot be checked against this save (save with a newer step)"));
        try {
            return JSON.readValue(text, SealManifest.class);
        } catch (IOException e) {
            throw StoreException.conflict("the manifest " + manifest + " of rank " + rank + " of generation " + step
                    + " of job " + job + " cannot be read (" + e.getMessage() + "); save with a newer step");
        }
    }

    /** Refuses a second, different save ({@code saved}) of a step the rank already sealed. */
    static void checkSameState(TensorStore store, String job, long step, int rank, SealManifest sealed,
            StorePath saved) {
        SealManifest now = store.stat(saved).isPresent() ? of(store, saved, rank, step)
                : new SealManifest(rank, step, 0, Map.of(), Map.of());
        if (!now.tensors().equals(sealed.tensors()) || !now.files().equals(sealed.files())) {
            throw StoreException.conflict("rank " + rank + " of job " + job + " already sealed a different state as step "
                    + step + " (a step is sealed once, generations never change): save it as a newer step, or do not save "
                    + "again when the rank has not trained since it loaded step " + step + " (tenplex.last_loaded() names "
                    + "it; a rerun of tenplex run resumes after the steps already saved)");
        }
    }
}
