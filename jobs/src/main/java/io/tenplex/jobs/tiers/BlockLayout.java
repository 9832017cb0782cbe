package io.tenplex.jobs.tiers;

import io.tenplex.jobs.generations.SealManifest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A worker's data block in an erasure-coded group: its sealed ranks in rank order, each rank's
 * tensors then files in manifest order, back to back. Encoder and rebuild derive it from the same
 * manifests, so they agree on every offset. A value.
 */
record BlockLayout(List<Segment> segments, long length) {
    /** One tensor or file of the block: where it is in its rank's tree and in the block. */
    record Segment(int rank, String path, SealManifest.Item item, boolean tensor, long offset) {
    }

    BlockLayout {
        segments = List.copyOf(segments);
    }

    /** The block of a worker holding {@code manifests} (rank order is theirs, sorted by the caller). */
    static BlockLayout of(List<SealManifest> manifests) {
        List<Segment> out = new ArrayList<>();
        long at = 0;
        for (SealManifest m : manifests) {
            for (Map.Entry<String, SealManifest.Item> t : m.tensors().entrySet()) {
                out.add(new Segment(m.rank(), t.getKey(), t.getValue(), true, at));
                at += t.getValue().size();
            }
            for (Map.Entry<String, SealManifest.Item> f : m.files().entrySet()) {
                out.add(new Segment(m.rank(), f.getKey(), f.getValue(), false, at));
                at += f.getValue().size();
            }
        }
        return new BlockLayout(out, at);
    }
}
