package io.tenplex.server;

import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlobWriter;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarFile;

/**
 * {@code POST /upload} with {@code application/x-tar}: unpacks every entry under {@code prefix}, all
 * or nothing. A data entry {@code x} with a sibling {@code x.meta} holding a valid sidecar of
 * matching size becomes the tensor {@code x} (the prototype's layout of a saved tensor). The archive
 * is received into one blob (read by the socket in place) and indexed on the work executor, not on
 * the event loop; each entry's bytes are then copied once from the archive into the entry's blob,
 * checksummed on the way.
 */
final class TarUpload extends Uploads.SinkUpload {
    private final StorePath prefix;
    private final boolean replace;
    private final List<BlobWriter> pending = new ArrayList<>();

    TarUpload(StorePath prefix, boolean replace) {
        this.prefix = prefix;
        this.replace = replace;
    }

    @Override
    void head(Exchange ex) {
        checksum = UploadChecksum.of(ex);
        sink = new BodySink(ex.rc.store().allocator(), Uploads.contentLength(ex), ex.rc.store().checksumBlock());
    }

    @Override
    void end(Exchange ex) {
        BlobWriter archive = sink.finish("the declared Content-Length");
        checksum.verify(archive, new byte[0], 0); // over the whole archive; closes it on a mismatch
        Blob tar = archive.take();
        ex.rc.work().execute(() -> {
            Throwable failure = null;
            try {
                unpack(ex.rc.store(), tar);
            } catch (Throwable t) {
                failure = t;
            } finally {
                tar.release();
                pending.forEach(BlobWriter::close); // entries not handed to the store
                pending.clear();
            }
            Throwable f = failure;
            ex.ctx.executor().execute(() -> {
                if (f == null) {
                    Uploads.EMPTY_OK.accept(ex, true);
                } else {
                    ex.respondError(f);
                }
            });
        });
    }

    private void unpack(TensorStore store, Blob tar) {
        if (tar.size() % 512 != 0 || tar.size() < 1024) {
            throw HttpError.badRequest("not a valid tar archive: " + tar.size()
                    + " bytes (an archive is at least 1024 bytes, in 512-byte records)");
        }
        Map<StorePath, BlobWriter> files = new LinkedHashMap<>();
        List<StorePath> dirs = new ArrayList<>();
        try (TarFile archive = new TarFile(new BlobChannel(tar))) {
            for (TarArchiveEntry e : archive.getEntries()) {
                read(store, archive, tar, e, files, dirs);
            }
        } catch (IOException | IllegalArgumentException e) {
            if (e instanceof HttpError h) {
                throw h;
            }
            throw HttpError.badRequest("not a valid tar archive: " + e.getMessage());
        }
        List<TensorStore.Put> puts = puts(files);
        for (BlobWriter w : pending) {
            w.close(); // sidecars folded into tensors
        }
        pending.clear();
        store.putAll(puts, replace);
        dirs.forEach(store::mkdirs);
    }

    /**
     * Reads one archive entry: a directory to make, or a file's bytes into a new writer, copied from
     * the archive with their checksums in one pass (a sparse entry is expanded by the archive reader).
     */
    private void read(TensorStore store, TarFile archive, Blob tar, TarArchiveEntry e, Map<StorePath, BlobWriter> files,
            List<StorePath> dirs) throws IOException {
        StorePath p = prefix.resolve(StorePath.parse(e.getName()));
        DaemonOwned.check(p);
        if (e.isDirectory()) {
            dirs.add(p);
            return;
        }
        if (!e.isFile()) {
            throw HttpError.badRequest("archive entry '" + e.getName() + "' is neither a file nor a "
                    + "directory (links and devices are not supported)");
        }
        BlobWriter w = BlobWriter.allocate(store.allocator(), e.getSize(), store.checksumBlock());
        pending.add(w);
        if (e.isSparse()) {
            copy(archive.getInputStream(e), w);
        } else {
            long n = Math.max(0, Math.min(e.getSize(), tar.size() - e.getDataOffset()));
            for (ByteBuffer v : tar.views(Math.min(e.getDataOffset(), tar.size()), n)) {
                w.append(v);
            }
        }
        if (!w.isComplete()) {
            throw HttpError.badRequest("archive entry '" + e.getName() + "' is truncated: " + w.written() + " of "
                    + w.size() + " bytes");
        }
        if (files.put(p, w) != null) {
            throw HttpError.badRequest("archive holds " + p + " twice");
        }
    }

    private static void copy(InputStream in, BlobWriter w) throws IOException {
        byte[] buf = new byte[(int) Math.min(1 << 20, Math.max(1, w.size()))];
        int n;
        while (w.written() < w.size() && (n = in.read(buf, 0, (int) Math.min(buf.length, w.size() - w.written()))) > 0) {
            w.append(ByteBuffer.wrap(buf, 0, n));
        }
    }

    /** The entries to publish: a file with a matching sidecar is a tensor, and that sidecar is not stored. */
    private static List<TensorStore.Put> puts(Map<StorePath, BlobWriter> files) {
        List<TensorStore.Put> puts = new ArrayList<>();
        for (Map.Entry<StorePath, BlobWriter> f : files.entrySet()) {
            StorePath p = f.getKey();
            BlobWriter sidecar = files.get(p.parent().child(p.name() + ".meta"));
            TensorMeta meta = sidecar == null ? null : sidecarMeta(sidecar, f.getValue().size());
            if (p.name().endsWith(".meta") && isSidecarOfTensor(files, p)) {
                continue;
            }
            puts.add(new TensorStore.Put(p, meta, f.getValue().take(), f.getValue().checksums()));
        }
        return puts;
    }

    private static boolean isSidecarOfTensor(Map<StorePath, BlobWriter> files, StorePath p) {
        StorePath data = p.parent().child(p.name().substring(0, p.name().length() - ".meta".length()));
        BlobWriter d = files.get(data);
        return d != null && sidecarMeta(files.get(p), d.size()) != null;
    }

    private static TensorMeta sidecarMeta(BlobWriter sidecar, long dataSize) {
        if (sidecar.size() > 4096) {
            return null;
        }
        ByteBuffer b = ByteBuffer.allocate((int) sidecar.size());
        for (ByteBuffer v : sidecarBlobViews(sidecar)) {
            b.put(v);
        }
        try {
            TensorMeta m = TensorMeta.parseSidecar(new String(b.array(), StandardCharsets.US_ASCII));
            return m.byteSize() == dataSize ? m : null;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static ByteBuffer[] sidecarBlobViews(BlobWriter w) {
        return w.peek().views(0, w.size());
    }
}
