package io.tenplex.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/** Builds small tar archives for tests (entries in name order). */
final class Tar {
    private Tar() {
    }

    static byte[] of(Map<String, byte[]> entries) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream out = new TarArchiveOutputStream(bytes)) {
            for (Map.Entry<String, byte[]> e : new TreeMap<>(entries).entrySet()) {
                TarArchiveEntry te = new TarArchiveEntry(e.getKey());
                te.setSize(e.getValue().length);
                out.putArchiveEntry(te);
                out.write(e.getValue());
                out.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }
}
