package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.tenplex.store.StorePath;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32C;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;

/**
 * An archive read as it arrives, in pieces split anywhere, gives exactly the entries that
 * commons-compress's stream reader (the oracle, which the daemon used before) reads from it, with
 * the whole body's CRC32C; malformed and cut archives are refused and free what they held.
 */
class TarStreamTest {
    private static final StorePath PREFIX = StorePath.parse("/p");

    @Test
    void randomArchives_inRandomPieces_giveTheOraclesEntriesAndChecksum() throws Exception {
        Random r = new Random(42);
        for (int round = 0; round < 40; round++) {
            int mode = round % 3 == 0 ? TarArchiveOutputStream.LONGFILE_GNU : TarArchiveOutputStream.LONGFILE_POSIX;
            byte[] tar = randomArchive(r, mode);
            Map<String, byte[]> want = oracle(tar);
            try (Allocator a = new Allocator(64 << 20, 5000)) {
                TarStream s = new TarStream(PREFIX, a, 1024, true);
                feed(s, tar, r);
                try (TarStream.Unpacked u = s.finish()) {
                    assertEquals(want.keySet(), names(u), "round " + round);
                    for (Map.Entry<StorePath, BlobWriter> f : u.files().entrySet()) {
                        assertArrayEquals(want.get(f.getKey().toString()), bytes(f.getValue()), f.getKey().toString());
                    }
                    CRC32C c = new CRC32C();
                    c.update(tar);
                    assertEquals((int) c.getValue(), u.crc(), "round " + round);
                    assertEquals(tar.length, u.size());
                }
                assertEquals(0, a.usedBytes());
            }
        }
    }

    @Test
    void whatFollowsTheEndRecord_isNotRead_andAMissingEndRecordIsAccepted() throws Exception {
        byte[] tar = plain(Map.of("a", new byte[] {1, 2, 3}));
        byte[] junk = Arrays.copyOf(tar, tar.length + 1024);
        Arrays.fill(junk, tar.length, junk.length, (byte) 7);
        byte[] noEnd = Arrays.copyOf(tar, 1024); // header and one record of data, no end records
        for (byte[] t : new byte[][] {junk, noEnd}) {
            try (Allocator a = new Allocator(1 << 20)) {
                TarStream s = new TarStream(PREFIX, a, 1024, false);
                feed(s, t, new Random(1));
                try (TarStream.Unpacked u = s.finish()) {
                    assertArrayEquals(new byte[] {1, 2, 3}, bytes(u.files().get(StorePath.parse("/p/a"))));
                }
            }
        }
    }

    @Test
    void cutOrMalformedArchives_areRefused_andHoldNothing() throws Exception {
        byte[] tar = plain(Map.of("a", new byte[3000]));
        assertRefused(Arrays.copyOf(tar, 512 + 1024), "truncated"); // header and 1024 of 3000 bytes
        assertRefused(Arrays.copyOf(tar, 700), "in 512-byte records");
        byte[] badSum = tar.clone();
        badSum[0] ^= 1; // the name changes, the header's checksum does not
        assertRefused(badSum, "not a valid tar archive");
        byte[] twice = concat(Arrays.copyOf(tar, 512 + 3072), tar);
        assertRefused(twice, "twice");
        ByteArrayOutputStream link = new ByteArrayOutputStream();
        try (TarArchiveOutputStream out = new TarArchiveOutputStream(link)) {
            TarArchiveEntry e = new TarArchiveEntry("l", TarArchiveEntry.LF_SYMLINK);
            e.setLinkName("a");
            out.putArchiveEntry(e);
            out.closeArchiveEntry();
        }
        assertRefused(link.toByteArray(), "neither a file nor a directory");
    }

    private static void assertRefused(byte[] tar, String reason) {
        try (Allocator a = new Allocator(1 << 20)) {
            TarStream s = new TarStream(PREFIX, a, 1024, false);
            HttpError e = assertThrows(HttpError.class, () -> {
                feed(s, tar, new Random(3));
                s.finish().close();
            });
            assertTrue(e.getMessage().contains(reason), e.getMessage());
            s.close();
            assertEquals(0, a.usedBytes());
        }
    }

    private static void feed(TarStream s, byte[] tar, Random r) {
        int at = 0;
        while (at < tar.length) {
            int n = Math.min(tar.length - at, switch (r.nextInt(4)) {
                case 0 -> 1 + r.nextInt(8);
                case 1 -> 511 + r.nextInt(3);
                case 2 -> 1 + r.nextInt(5000);
                default -> 1 + r.nextInt(100_000);
            });
            s.add(Unpooled.wrappedBuffer(tar, at, n));
            at += n;
        }
    }

    private static byte[] randomArchive(Random r, int longNames) throws IOException {
        Map<String, byte[]> entries = new LinkedHashMap<>();
        int n = 1 + r.nextInt(12);
        int[] sizes = {0, 1, 511, 512, 513, 1023, 4096, 70_001};
        for (int i = 0; i < n; i++) {
            String name = "e" + i + (r.nextInt(4) == 0 ? "/" + "x".repeat(100 + r.nextInt(60)) : "");
            byte[] b = new byte[r.nextBoolean() ? sizes[r.nextInt(sizes.length)] : r.nextInt(20_000)];
            r.nextBytes(b);
            entries.put(name, b);
        }
        return archive(entries, longNames);
    }

    private static byte[] plain(Map<String, byte[]> entries) throws IOException {
        return archive(entries, TarArchiveOutputStream.LONGFILE_ERROR, false);
    }

    private static byte[] archive(Map<String, byte[]> entries, int longNames) throws IOException {
        return archive(entries, longNames, true);
    }

    private static byte[] archive(Map<String, byte[]> entries, int longNames, boolean dir) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream out = new TarArchiveOutputStream(bytes)) {
            out.setLongFileMode(longNames);
            if (dir) {
                out.putArchiveEntry(new TarArchiveEntry("dir/"));
                out.closeArchiveEntry();
            }
            for (Map.Entry<String, byte[]> e : entries.entrySet()) {
                TarArchiveEntry te = new TarArchiveEntry(e.getKey());
                te.setSize(e.getValue().length);
                out.putArchiveEntry(te);
                out.write(e.getValue());
                out.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }

    /** The files as commons-compress's stream reader reads them, under the prefix. */
    private static Map<String, byte[]> oracle(byte[] tar) throws IOException {
        Map<String, byte[]> out = new LinkedHashMap<>();
        try (TarArchiveInputStream in = new TarArchiveInputStream(new ByteArrayInputStream(tar))) {
            TarArchiveEntry e;
            while ((e = in.getNextEntry()) != null) {
                if (e.isFile()) {
                    out.put(PREFIX.resolve(StorePath.parse(e.getName())).toString(), in.readAllBytes());
                }
            }
        }
        return out;
    }

    private static java.util.Set<String> names(TarStream.Unpacked u) {
        java.util.Set<String> s = new java.util.LinkedHashSet<>();
        u.files().keySet().forEach(p -> s.add(p.toString()));
        return s;
    }

    private static byte[] bytes(BlobWriter w) {
        byte[] b = new byte[(int) w.size()];
        ByteBuffer dst = ByteBuffer.wrap(b);
        for (ByteBuffer v : w.peek().views(0, w.size())) {
            dst.put(v);
        }
        return b;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
