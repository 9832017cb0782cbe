package io.tenplex.datasets.netcdf;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Writes classic headers field by field, big-endian, so that a test can make any header, valid or
 * not: 32-bit counts for CDF-1/2 and 64-bit for CDF-5, 32-bit offsets for CDF-1 and 64-bit for the others.
 */
final class CdfBytes {
    static final int NC_BYTE = 1;
    static final int NC_SHORT = 3;
    static final int NC_INT = 4;
    static final int NC_DOUBLE = 6;
    static final int NC_UINT64 = 11;

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final DataOutputStream out = new DataOutputStream(bytes);
    private final int version;

    /** Starts a header: the signature with {@code version} and {@code numrecs}. */
    CdfBytes(int version, long numrecs) {
        this.version = version;
        raw('C', 'D', 'F', version);
        count(numrecs);
    }

    CdfBytes raw(int... b) {
        for (int x : b) {
            bytes.write(x);
        }
        return this;
    }

    CdfBytes int32(int v) {
        try {
            out.writeInt(v);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    CdfBytes int64(long v) {
        try {
            out.writeLong(v);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /** A count, length or size: 64 bits in CDF-5, else 32. */
    CdfBytes count(long n) {
        return version == 5 ? int64(n) : int32((int) n);
    }

    /** An offset: 32 bits in CDF-1, else 64. */
    CdfBytes offset(long at) {
        return version == 1 ? int32((int) at) : int64(at);
    }

    CdfBytes name(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        count(b.length);
        raw(b);
        return zeros((4 - b.length % 4) % 4);
    }

    CdfBytes raw(byte[] b) {
        bytes.write(b, 0, b.length);
        return this;
    }

    CdfBytes zeros(int n) {
        return raw(new byte[n]);
    }

    /** An absent list (a dimension, attribute or variable list with no entries). */
    CdfBytes absent() {
        int32(0);
        return count(0);
    }

    /** A dimension list: dimensions d0, d1, ... of these lengths (0: the record dimension). */
    CdfBytes dims(long... lengths) {
        int32(0x0A).count(lengths.length);
        for (int i = 0; i < lengths.length; i++) {
            name("d" + i).count(lengths[i]);
        }
        return this;
    }

    /** The tag and count of the variable list. */
    CdfBytes vars(long n) {
        return int32(0x0B).count(n);
    }

    /** A variable with no attributes and a vsize of 0 (which readers recompute). */
    CdfBytes var(String name, int type, long begin, long... dimids) {
        name(name).count(dimids.length);
        for (long d : dimids) {
            count(d);
        }
        return absent().int32(type).count(0).offset(begin);
    }

    int size() {
        return bytes.size();
    }

    byte[] bytes() {
        return bytes.toByteArray();
    }

    /** Writes the header, then zeros up to {@code total} bytes, to {@code p}. */
    Path write(Path p, int total) throws IOException {
        byte[] b = bytes();
        Files.write(p, java.util.Arrays.copyOf(b, Math.max(total, b.length)));
        return p;
    }
}
