package io.tenplex.jobs.common;

import io.tenplex.store.DataRef;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.BlobWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/** Small control files (a step, a model spec, a manifest) kept in the store next to a job's data. */
public final class SmallFiles {
    /** Larger files are not control files. */
    static final int MAX_BYTES = 64 << 20;

    private SmallFiles() {
    }

    /** Writes (or atomically replaces) the file at {@code path}. */
    public static void put(TensorStore store, StorePath path, byte[] bytes) {
        BlobWriter w = BlobWriter.allocate(store.allocator(), bytes.length, store.checksumBlock());
        w.append(ByteBuffer.wrap(bytes));
        store.putFile(path, w.take(), w.checksums(), true);
    }

    public static void put(TensorStore store, StorePath path, String text) {
        put(store, path, text.getBytes(StandardCharsets.UTF_8));
    }

    /** The file's text, or empty when there is none. */
    public static Optional<String> read(TensorStore store, StorePath path) {
        try (DataRef ref = store.open(path)) {
            if (ref.size() > MAX_BYTES) {
                throw StoreException.conflict(path + " has " + ref.size() + " bytes; not a control file");
            }
            ByteBuffer b = ByteBuffer.allocate((int) ref.size());
            ref.copyTo(0, ref.size(), b);
            return Optional.of(new String(b.array(), StandardCharsets.UTF_8));
        } catch (StoreException e) {
            if (e.kind() == StoreException.Kind.NOT_FOUND) {
                return Optional.empty();
            }
            throw e;
        }
    }
}
