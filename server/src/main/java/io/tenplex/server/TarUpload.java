package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.BlobWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code POST /upload} with {@code application/x-tar}: unpacks every entry under {@code prefix}, all
 * or nothing. A data entry {@code x} with a sibling {@code x.meta} holding a valid sidecar of
 * matching size becomes the tensor {@code x} (the prototype's layout of a saved tensor). The archive
 * is read as it arrives ({@link TarStream}): each entry's bytes go straight into their own blob; the
 * entries are published on the work executor, not on the event loop.
 */
final class TarUpload extends Call {
    private static final String SIDECAR = ".meta";
    private final StorePath prefix;
    private final boolean replace;
    private UploadChecksum checksum = UploadChecksum.NONE;
    private TarStream stream;

    TarUpload(StorePath prefix, boolean replace) {
        this.prefix = prefix;
        this.replace = replace;
    }

    @Override
    void head(Exchange ex) {
        checksum = UploadChecksum.of(ex);
        stream = new TarStream(prefix, ex.rc.store().allocator(), ex.rc.store().checksumBlock(), checksum.requested());
    }

    @Override
    void content(ByteBuf data) {
        stream.add(data);
    }

    @Override
    ByteBuf landing(long onWire) {
        return stream == null ? null : stream.landing(onWire);
    }

    @Override
    void end(Exchange ex) {
        TarStream.Unpacked archive = stream.finish(); // the entries are ours now
        stream = null;
        try {
            checksum.verify(archive.crc(), archive.size()); // over the whole archive
        } catch (RuntimeException e) {
            archive.close();
            throw e;
        }
        Uploads.publishOnWork(ex, () -> {
            try {
                publish(ex.rc.store(), archive);
            } finally {
                archive.close(); // entries not handed to the store
            }
        }, archive::close);
    }

    @Override
    void abort() {
        if (stream != null) {
            stream.close();
        }
    }

    private void publish(TensorStore store, TarStream.Unpacked archive) {
        List<TensorStore.Put> puts = puts(archive.files());
        archive.close(); // sidecars folded into tensors (the others were taken)
        store.putAll(puts, replace);
        archive.dirs().forEach(store::mkdirs);
    }

    /**
     * The entries to publish: a file with a matching sidecar is a tensor, and that sidecar is not stored.
     * Pairs are found from the sidecars' side (only a name ending in {@code .meta} is looked up), which
     * finds the same pairs as looking up {@code x.meta} for every {@code x}.
     */
    private static List<TensorStore.Put> puts(Map<StorePath, BlobWriter> files) {
        Map<StorePath, TensorMeta> tensors = new HashMap<>();
        Set<StorePath> sidecars = new HashSet<>();
        for (Map.Entry<StorePath, BlobWriter> f : files.entrySet()) {
            StorePath sidecarPath = f.getKey();
            String name = sidecarPath.isRoot() ? "" : sidecarPath.name();
            String dataName = name.endsWith(SIDECAR) ? name.substring(0, name.length() - SIDECAR.length()) : "";
            if (dataName.isEmpty() || dataName.equals(".") || dataName.equals("..")) {
                continue; // no file has such a name: not a sidecar
            }
            StorePath p = sidecarPath.parent().child(dataName);
            BlobWriter data = files.get(p);
            TensorMeta meta = data == null ? null : sidecarMeta(f.getValue(), data.size());
            if (meta != null) {
                tensors.put(p, meta);
                sidecars.add(sidecarPath);
            }
        }
        List<TensorStore.Put> puts = new ArrayList<>(files.size() - sidecars.size());
        for (Map.Entry<StorePath, BlobWriter> f : files.entrySet()) {
            StorePath p = f.getKey();
            if (!sidecars.contains(p)) {
                puts.add(new TensorStore.Put(p, tensors.get(p), f.getValue().take(), f.getValue().checksums()));
            }
        }
        return puts;
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
