package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.tenplex.store.StorePath;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarUtils;

/**
 * A tar archive read as it arrives: each entry's bytes go straight into the entry's own blob,
 * checksummed on the way (landed there by the socket when the entry is large, else copied once out
 * of the receive buffer, which then holds many small entries). Headers are read by commons-compress
 * exactly as its stream reader reads them (ustar, PAX and GNU long names): the records of an entry's
 * headers are handed to a {@link TarArchiveInputStream} of their own. Nothing is published here:
 * {@link #finish} hands the entries over, {@link #close} frees them. Event loop only.
 */
final class TarStream implements AutoCloseable {
    static final int RECORD = 512;
    /** Entries from this size on are landed by the socket; smaller ones share receive buffers. */
    static final int MIN_LANDING = 64 << 10;
    /** Most bytes of PAX and GNU long-name records ahead of the entries. */
    static final int MAX_META = 1 << 20;
    private static final byte[] ZERO_RECORD = new byte[RECORD];

    private enum State { HEADER, DATA, META, SKIP, END }

    /** The entries of a complete archive, owned by the holder until published; close frees the rest. */
    record Unpacked(Map<StorePath, BlobWriter> files, List<StorePath> dirs, List<BlobWriter> writers, int crc,
            long size) implements AutoCloseable {
        @Override
        public void close() {
            writers.forEach(BlobWriter::close); // published ones were taken: nothing to free
        }
    }

    private final StorePath prefix;
    private final Allocator allocator;
    private final int block;
    private final BodyCrc crc;
    private final InPlace inPlace = new InPlace();
    private final byte[] record = new byte[RECORD];
    private final ByteArrayOutputStream local = new ByteArrayOutputStream();
    private final ByteArrayOutputStream global = new ByteArrayOutputStream();
    private final Map<StorePath, BlobWriter> files = new LinkedHashMap<>();
    private final List<StorePath> dirs = new ArrayList<>();
    private final List<BlobWriter> writers = new ArrayList<>();
    private ByteArrayOutputStream meta;
    private State state = State.HEADER;
    private int recordFill;
    private long left;
    private long pad;
    private BlobWriter writer;
    private StorePath path;
    private String name;
    private long received;

    /** @param checksum whether to compute the whole body's CRC32C (the client sent one to check) */
    TarStream(StorePath prefix, Allocator allocator, int block, boolean checksum) {
        this.prefix = prefix;
        this.allocator = allocator;
        this.block = block;
        this.crc = checksum ? new BodyCrc() : null;
    }

    /** The next piece of the archive (borrowed; its indexes do not move). */
    void add(ByteBuf data) {
        int pos = data.readerIndex();
        int end = data.writerIndex();
        while (pos < end) {
            int n = (int) Math.min(end - pos, state == State.HEADER ? RECORD - recordFill : state == State.END
                    ? end - pos : left);
            switch (state) {
                case HEADER -> {
                    data.getBytes(pos, record, recordFill, n);
                    raw(data, pos, n);
                    recordFill += n;
                }
                case DATA -> inPlace.add(writer, data.slice(pos, n));
                case META -> {
                    byte[] bytes = new byte[n];
                    data.getBytes(pos, bytes);
                    meta.writeBytes(bytes);
                    raw(data, pos, n);
                }
                default -> raw(data, pos, n); // padding, a directory's data, what follows the end
            }
            pos += n;
            received += n;
            step(n);
        }
    }

    /** Moves on after {@code n} bytes of the current part. */
    private void step(int n) {
        if (state == State.HEADER) {
            if (recordFill == RECORD) {
                recordFill = 0;
                header();
            }
            return;
        }
        if (state == State.END) {
            return;
        }
        left -= n;
        if (left == 0) {
            dataDone();
        }
    }

    private void dataDone() {
        if (state == State.DATA) {
            entryDone();
            return;
        }
        if (state == State.META) {
            meta.writeBytes(new byte[(int) pad]); // kept in whole records, as the header reader reads them
        }
        afterData();
    }

    private void raw(ByteBuf data, int pos, int n) {
        if (crc != null) {
            crc.update(data.nioBuffer(pos, n));
        }
    }

    private void header() {
        if (Arrays.mismatch(record, ZERO_RECORD) < 0) {
            state = State.END; // the end-of-archive record: what follows is not read
            return;
        }
        if (!TarUtils.verifyCheckSum(record)) {
            throw HttpError.badRequest("not a valid tar archive: the header record at byte " + (received - RECORD)
                    + " has a wrong checksum");
        }
        byte type = record[156];
        if (type == 'x' || type == 'X' || type == 'g' || type == 'L' || type == 'K') {
            metaHeader(type == 'g' ? global : local);
            return;
        }
        PlainUstar.File plain = global.size() == 0 && local.size() == 0 ? PlainUstar.read(record) : null;
        if (plain != null) {
            file(resolved(plain.name()), plain.name(), plain.size());
            return;
        }
        TarArchiveEntry e = parse();
        if (e == null) {
            throw HttpError.badRequest("not a valid tar archive: an entry header could not be read");
        }
        entry(e);
    }

    /** A PAX or GNU long-name header: its record and data are kept for the entry they describe. */
    private void metaHeader(ByteArrayOutputStream into) {
        long size;
        try {
            size = new TarArchiveEntry(record).getSize();
        } catch (IllegalArgumentException e) {
            throw HttpError.badRequest("not a valid tar archive: " + e.getMessage());
        }
        if (size < 0 || size > MAX_META - RECORD - (long) local.size() - global.size()) {
            throw HttpError.badRequest("not a valid tar archive: more than " + MAX_META
                    + " bytes of PAX or long-name headers");
        }
        into.writeBytes(record);
        meta = into;
        data(State.META, size);
    }

    /**
     * The entry that the kept headers and this record describe, read by commons-compress: a plain
     * record alone as its stream reader reads it ({@link TarArchiveEntry#TarArchiveEntry(byte[])},
     * no PAX headers to apply), else the kept records and this one through a stream reader.
     */
    private TarArchiveEntry parse() {
        if (global.size() == 0 && local.size() == 0) {
            try {
                return new TarArchiveEntry(record);
            } catch (IllegalArgumentException e) {
                throw HttpError.badRequest("not a valid tar archive: error detected parsing the header: "
                        + e.getMessage());
            }
        }
        ByteArrayOutputStream all = new ByteArrayOutputStream(global.size() + local.size() + 3 * RECORD);
        all.writeBytes(global.toByteArray());
        all.writeBytes(local.toByteArray());
        all.writeBytes(record);
        all.writeBytes(new byte[2 * RECORD]);
        local.reset();
        try (TarArchiveInputStream in = new TarArchiveInputStream(new ByteArrayInputStream(all.toByteArray()))) {
            return in.getNextEntry();
        } catch (IOException | IllegalArgumentException e) {
            throw HttpError.badRequest("not a valid tar archive: " + e.getMessage());
        }
    }

    /** A directory to make, or a file whose data goes into a new writer. */
    private void entry(TarArchiveEntry e) {
        StorePath p = resolved(e.getName());
        if (e.isDirectory()) {
            dirs.add(p);
            data(State.SKIP, e.getSize());
            return;
        }
        if (!e.isFile() || e.isSymbolicLink() || e.isLink() || e.isCharacterDevice() || e.isBlockDevice() || e.isFIFO()) {
            throw HttpError.badRequest("archive entry '" + e.getName() + "' is neither a file nor a "
                    + "directory (links and devices are not supported)");
        }
        if (e.isSparse() || e.isPaxGNU1XSparse()) {
            throw HttpError.badRequest("archive entry '" + e.getName() + "' is a sparse file (not supported: "
                    + "archive it as a regular file)");
        }
        file(p, e.getName(), e.getSize());
    }

    /** An entry's name below the prefix, when a client may write there. */
    private StorePath resolved(String entryName) {
        StorePath p = prefix.resolve(StorePath.parse(entryName));
        DaemonOwned.check(p);
        return p;
    }

    /** A file entry: its data goes into a new writer. */
    private void file(StorePath p, String entryName, long size) {
        writer = BlobWriter.allocate(allocator, size, block);
        writers.add(writer);
        path = p;
        name = entryName;
        data(State.DATA, size);
    }

    /** Expects {@code size} bytes of data in {@code next}, then their padding to a whole record. */
    private void data(State next, long size) {
        left = size;
        pad = (RECORD - size % RECORD) % RECORD;
        state = next;
        if (size == 0) {
            dataDone();
        }
    }

    private void entryDone() {
        inPlace.detach();
        if (crc != null) {
            crc.append(writer.checksums().range(0, writer.size()).orElseThrow(), writer.size());
        }
        if (files.put(path, writer) != null) {
            throw HttpError.badRequest("archive holds " + path + " twice");
        }
        writer = null;
        afterData();
    }

    private void afterData() {
        if (pad > 0) {
            left = pad;
            pad = 0;
            state = State.SKIP;
        } else {
            state = State.HEADER;
        }
    }

    /**
     * The buffer the next socket read should fill: the current entry's unfilled memory when its data
     * is streaming and large, else null.
     */
    ByteBuf landing(long onWire) {
        return state == State.DATA && left >= MIN_LANDING ? inPlace.landing(writer, Math.min(onWire, left)) : null;
    }

    /** The complete archive's entries, now the caller's; a 400 when the archive is cut short or malformed. */
    Unpacked finish() {
        inPlace.detach();
        if (received % RECORD != 0 || received < 2 * RECORD) {
            throw HttpError.badRequest("not a valid tar archive: " + received
                    + " bytes (an archive is at least 1024 bytes, in 512-byte records)");
        }
        if (state == State.DATA) {
            throw HttpError.badRequest("archive entry '" + name + "' is truncated: " + writer.written() + " of "
                    + writer.size() + " bytes");
        }
        if (state == State.META || state == State.SKIP) {
            throw HttpError.badRequest("not a valid tar archive: it ends inside an entry's data");
        }
        Unpacked u = new Unpacked(new LinkedHashMap<>(files), List.copyOf(dirs), List.copyOf(writers),
                crc == null ? 0 : crc.value(), received);
        writers.clear();
        files.clear();
        return u;
    }

    @Override
    public void close() {
        inPlace.detach();
        writers.forEach(BlobWriter::close);
        writers.clear();
        files.clear();
    }
}
