package io.tenplex.bench;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/** Benchmark payloads: deterministic bytes, a per-round stamp so that stale bytes fail the check, a tar of tensors. */
final class Payloads {
    private static final int STAMP_EVERY = 4096;

    private Payloads() {
    }

    /** Fills the buffer with a pattern that differs per seed. */
    static void fill(ByteBuffer b, int seed) {
        for (int i = 0; i + 4 <= b.capacity(); i += 4) {
            b.putInt(i, (int) ((i + seed) * 2654435761L));
        }
    }

    /** Writes {@code round} into the first 8 bytes of every 4 KiB: every tensor of a round differs from the last. */
    static void stamp(ByteBuffer b, int round) {
        for (int i = 0; i + 8 <= b.capacity(); i += STAMP_EVERY) {
            b.putLong(i, 0x5EED_0000_0000_0000L | (round & 0xffffffffL));
        }
    }

    /** Stamps {@code all} and writes its tensors' bytes into the archive made by {@link #tar} in place. */
    static void stampTar(byte[] tar, ByteBuffer all, int size, int count, int round) {
        stamp(all, round);
        for (int i = 0; i < count; i++) {
            all.get(i * size, tar, dataOffset(i, size), size);
        }
    }

    /**
     * A ustar archive of {@code count} tensors {@code t<i>} of {@code size} bytes (u8), each with its
     * {@code .meta} sidecar; every entry's header and data are in 512-byte records, so the data of
     * tensor {@code i} lies at {@link #dataOffset}.
     */
    static byte[] tar(ByteBuffer all, int size, int count) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            for (int i = 0; i < count; i++) {
                byte[] data = new byte[size];
                all.get(i * size, data);
                put(t, "t" + i, data);
                put(t, "t" + i + ".meta", sidecar(size));
            }
        }
        byte[] tar = out.toByteArray();
        for (int i = 0; i < count; i++) {
            if (tar[dataOffset(i, size)] != all.get(i * size)) {
                throw new IllegalStateException("unexpected archive layout");
            }
        }
        return tar;
    }

    private static int dataOffset(int i, int size) {
        int sidecarRecords = 512 + 512; // header + one record of sidecar text
        return i * (512 + size + sidecarRecords) + 512;
    }

    private static byte[] sidecar(int size) {
        return io.tenplex.ptc.TensorMeta.of(io.tenplex.ptc.DType.U8, size).sidecarBytes();
    }

    private static void put(TarArchiveOutputStream t, String name, byte[] data) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(data.length);
        t.putArchiveEntry(e);
        t.write(data);
        t.closeArchiveEntry();
    }
}
