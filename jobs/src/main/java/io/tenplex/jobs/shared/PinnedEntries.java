package io.tenplex.jobs.shared;

import io.tenplex.store.DataRef;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StorePath;
import io.tenplex.store.memory.SharedSegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** What a load pin tells its client of each entry of the pinned tree. */
final class PinnedEntries {
    private PinnedEntries() {
    }

    /** The pin's entries: small files inline, tensors where they lie in shared memory or in the copies. */
    static List<SharedSaves.PinnedEntry> of(StorePath root, List<Entry> walked, List<DataRef> refs,
            LoadCopies.Copied copies) {
        List<SharedSaves.PinnedEntry> entries = new ArrayList<>(walked.size());
        long inline = 0;
        int copied = 0;
        for (int i = 0; i < walked.size(); i++) {
            Entry e = walked.get(i);
            DataRef ref = refs.get(i);
            boolean small = e.type() != EntryType.TENSOR && ref.size() <= SharedSaves.MAX_INLINE_FILE
                    && inline + ref.size() <= SharedSaves.MAX_INLINE_TOTAL;
            inline += small ? ref.size() : 0;
            Optional<SharedSegment.Location> loc = ref.sharedLocation();
            if (e.type() == EntryType.TENSOR && ref.size() > 0 && loc.isEmpty() && copies != null) {
                SharedSegment seg = copies.segment();
                loc = Optional.of(new SharedSegment.Location(seg.file(), seg.nonce(), seg.capacity(),
                        copies.offsets()[copied++]));
            }
            entries.add(pinned(root, e, ref, small, loc));
        }
        return entries;
    }

    private static SharedSaves.PinnedEntry pinned(StorePath root, Entry e, DataRef ref, boolean inline,
            Optional<SharedSegment.Location> loc) {
        String rel = e.path().toString().substring(root.toString().length() + 1);
        if (e.type() != EntryType.TENSOR) {
            byte[] data = null;
            if (inline) {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate((int) ref.size());
                ref.copyTo(0, ref.size(), b);
                data = b.array();
            }
            return new SharedSaves.PinnedEntry(rel, "file", null, null, ref.size(), null, null, null, null, data);
        }
        return new SharedSaves.PinnedEntry(rel, "tensor", e.meta().dtype().wireName(), e.meta().shape().dims(), ref.size(),
                loc.map(l -> l.file().toString()).orElse(null), loc.map(SharedSegment.Location::nonce).orElse(null),
                loc.map(SharedSegment.Location::capacity).orElse(null), loc.map(SharedSegment.Location::offset).orElse(null),
                null);
    }
}
