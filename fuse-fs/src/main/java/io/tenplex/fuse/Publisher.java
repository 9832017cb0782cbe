package io.tenplex.fuse;

import io.tenplex.store.Npy;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.OutOfBudgetException;
import java.nio.ByteBuffer;

/**
 * Publishes a file written through the mount in one step: its bytes become the store's file, or, for
 * a complete {@code x.npy}, the tensor {@code x}. Failures are errno: EINVAL for a {@code .npy} that is
 * not valid NumPy, ENOSPC over the memory budget, and the store's refusals by kind.
 */
final class Publisher {
    static final String NPY = ".npy";

    private final TensorStore store;

    Publisher(TensorStore store) {
        this.store = store;
    }

    /** Publishes a writer's bytes if written since the last publish; a failure removes a file it created. */
    void publishIfDirty(WriteBuffer w) {
        if (!w.dirty) {
            return;
        }
        w.dirty = false;
        try {
            publish(w.path, w.data, w.size);
        } catch (FsLogic.FsError e) {
            if (w.created) {
                store.delete(FsLogic.path(w.path)); // the placeholder made at create
            }
            throw e;
        }
    }

    void publish(String n, byte[] data, long size) {
        StorePath sp = FsLogic.path(n);
        try {
            if (n.endsWith(NPY) && size > 0) {
                publishTensor(n, sp, data, size);
                return;
            }
            try (BlobWriter bw = BlobWriter.allocate(store.allocator(), size, store.checksumBlock())) {
                bw.append(ByteBuffer.wrap(data, 0, (int) size));
                store.putFile(sp, bw.take(), bw.checksums(), true);
            }
        } catch (OutOfBudgetException e) {
            throw new FsLogic.FsError(FsLogic.ENOSPC, e.getMessage());
        } catch (StoreException e) {
            throw FsLogic.error(e);
        }
    }

    private void publishTensor(String n, StorePath sp, byte[] data, long size) {
        Npy.Header header = validNpy(n, data, size);
        StorePath tensor = sp.parent().child(sp.name().substring(0, sp.name().length() - NPY.length()));
        try (BlobWriter bw = BlobWriter.allocate(store.allocator(), header.meta().byteSize(), store.checksumBlock())) {
            bw.append(ByteBuffer.wrap(data, header.dataOffset(), (int) header.meta().byteSize()));
            store.putTensor(tensor, header.meta(), bw.take(), bw.checksums(), true);
        }
        store.delete(sp); // the placeholder made at create
    }

    /** A {@code .npy} written through the mount must be a complete NumPy file of a supported dtype. */
    private static Npy.Header validNpy(String n, byte[] data, long size) {
        Npy.Header header;
        try {
            header = Npy.parse(data, (int) Math.min(size, 1 << 17));
        } catch (IllegalArgumentException e) {
            throw new FsLogic.FsError(FsLogic.EINVAL, n + " is not a NumPy file we can store: " + e.getMessage());
        }
        if (header == null || header.dataOffset() + header.meta().byteSize() != size) {
            throw new FsLogic.FsError(FsLogic.EINVAL, n + " is not a complete .npy file (" + size + " bytes"
                    + (header == null ? ", no complete header)" : "; " + header.meta() + " needs "
                    + (header.dataOffset() + header.meta().byteSize()) + ")"));
        }
        return header;
    }
}
