package io.tenplex.server;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.tenplex.store.DataRef;
import io.tenplex.store.DeleteCounts;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.Crc32c;
import java.util.ArrayList;
import java.util.List;

/** The JSON answers of the store routes; Jackson writes a record's fields in declaration order. */
final class Replies {
    private Replies() {
    }

    /**
     * One entry: a directory has {@code children}, anything else {@code size}; a tensor also has
     * {@code dtype} and {@code shape}.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record EntryReply(String path, String name, String type, Integer children, Long size, String dtype,
            long[] shape) {
        static EntryReply of(Entry e) {
            boolean dir = e.type() == EntryType.DIR;
            return new EntryReply(e.path().toString(), e.name(), e.type().jsonName(), dir ? e.children() : null,
                    dir ? null : e.size(), e.meta() == null ? null : e.meta().dtype().wireName(),
                    e.meta() == null ? null : e.meta().shape().dims());
        }
    }

    /** A directory's entries (or a recursive walk's). */
    record Listing(String path, List<EntryReply> entries) {
        static Listing of(String path, List<Entry> entries) {
            return new Listing(path, entries.stream().map(EntryReply::of).toList());
        }
    }

    /** What a delete removed. */
    record Deleted(long deletedBytes, long files, long dirs) {
        static Deleted of(DeleteCounts c) {
            return new Deleted(c.bytes(), c.files(), c.dirs());
        }
    }

    /** The stored CRC32C of every block and of the whole ({@code crc32c} is null when unknown). */
    record Checksums(String path, long size, String algorithm, int blockSize, String crc32c, List<String> blocks) {
        static Checksums of(DataRef ref, BlockChecksums sums) {
            List<String> blocks = new ArrayList<>(sums.blockCount());
            for (int i = 0; i < sums.blockCount(); i++) {
                blocks.add(Crc32c.hex(sums.block(i)));
            }
            var whole = ref.crc32c(0, ref.size());
            return new Checksums(ref.path().toString(), ref.size(), "crc32c", sums.blockSize(),
                    whole.isPresent() ? Crc32c.hex(whole.getAsInt()) : null, blocks);
        }
    }

    /** The health answer. */
    record Health(String status) {
        static final Health OK = new Health("ok");
    }
}
