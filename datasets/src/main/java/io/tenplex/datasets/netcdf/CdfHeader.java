package io.tenplex.datasets.netcdf;

import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The header of a classic file, parsed and checked: {@code CDF} and the version byte (1, 2 or 5),
 * the number of records, the dimensions, the global attributes (skipped), and the variables with
 * their attributes (skipped), types and data offsets. CDF-1 has 32-bit offsets, CDF-2 64-bit
 * offsets, CDF-5 64-bit offsets, counts and sizes. Every count is checked against the bytes left
 * in the file and against a limit before anything is allocated for it. Immutable.
 */
final class CdfHeader {
    /** The most dimensions, variables, or attributes of one list, in a header. */
    static final int MAX_ENTRIES = 1 << 16;
    /** The most dimensions of one variable (NetCDF's {@code NC_MAX_VAR_DIMS}). */
    static final int MAX_VAR_DIMS = 1024;
    /** The most heap the variables' names and shapes may take (estimated), so that a header cannot exhaust it. */
    static final long MAX_HEADER_HEAP = 32L << 20;
    /** The largest variable (per record, for a record variable) that CDF-1 and CDF-2 can describe. */
    static final long MAX_CLASSIC_VAR = 0xFFFFFFFFL - 3;

    private static final int NC_DIMENSION = 0x0A;
    private static final int NC_VARIABLE = 0x0B;
    private static final int NC_ATTRIBUTE = 0x0C;
    // the fewest bytes a dimension, attribute or variable takes in any version: its count is checked against these
    private static final int MIN_DIM = 12;
    private static final int MIN_ATTR = 16;
    private static final int MIN_VAR = 32;

    final int version;
    /** The records in the file (a streaming file's, computed from its size). */
    final long numrecs;
    /** The bytes of one record: its record variables' parts, interleaved. */
    final long recsize;
    /** The offset just past the header. */
    final long headerEnd;
    final Map<String, CdfVariable> variables;

    private CdfHeader(int version, long numrecs, long recsize, long headerEnd, Map<String, CdfVariable> variables) {
        this.version = version;
        this.numrecs = numrecs;
        this.recsize = recsize;
        this.headerEnd = headerEnd;
        this.variables = variables;
    }

    /**
     * Reads and checks the header of the file open on {@code channel}.
     *
     * @param size the file's size in bytes
     * @param file its path, for messages
     * @throws IllegalArgumentException for a header that is not a valid classic header, naming the file and the field
     */
    static CdfHeader read(FileChannel channel, long size, String file) {
        HeaderInput in = new HeaderInput(channel, size, file);
        int magic = in.int32("the signature");
        if ((magic >>> 8) != 0x434446) { // "CDF"
            throw in.bad("no CDF signature");
        }
        int version = magic & 0xff;
        if (version != 1 && version != 2 && version != 5) {
            throw in.bad("version byte " + version + " (expected: 1, 2 or 5)");
        }
        boolean wide = version == 5;
        long numrecs = in.number(wide, "numrecs");
        boolean streaming = numrecs == -1; // all ones: STREAMING
        if (!streaming && numrecs < 0) {
            throw in.bad("numrecs is " + numrecs + " (negative)");
        }
        long[] dims = dimensions(in, wide);
        attributes(in, wide, version, "global attribute");
        List<CdfVariable> vars = variables(in, wide, version, dims);
        long headerEnd = in.position();
        long recsize;
        try {
            recsize = recsize(vars);
        } catch (ArithmeticException e) {
            throw in.bad("the record variables' sizes overflow when added up");
        }
        if (streaming) {
            numrecs = streamingRecords(vars, recsize, size);
        }
        checkSizes(in, version, vars);
        Map<String, CdfVariable> byName = new LinkedHashMap<>();
        for (CdfVariable v : vars) {
            if (byName.put(v.name(), v) != null) {
                throw in.bad("two variables are named '" + v.name() + "'");
            }
        }
        return new CdfHeader(version, numrecs, recsize, headerEnd, byName);
    }

    /** The dimension lengths, the record dimension's as 0. */
    private static long[] dimensions(HeaderInput in, boolean wide) {
        int n = count(in, wide, NC_DIMENSION, "dimension", MIN_DIM);
        long[] dims = new long[n];
        boolean record = false;
        for (int i = 0; i < n; i++) {
            in.name(wide, "the name of dimension " + i);
            dims[i] = in.nonNegative(wide, "the length of dimension " + i);
            if (dims[i] == 0) {
                if (record) {
                    throw in.bad("dimension " + i + " is a second record (unlimited) dimension");
                }
                record = true;
            }
        }
        return dims;
    }

    /** Moves past an attribute list, checking its counts and sizes. */
    private static void attributes(HeaderInput in, boolean wide, int version, String what) {
        int n = count(in, wide, NC_ATTRIBUTE, what, MIN_ATTR);
        for (int i = 0; i < n; i++) {
            String name = in.name(wide, "the name of " + what + " " + i);
            CdfType t = type(in, version, what + " " + name);
            long elems = in.nonNegative(wide, "the length of " + what + " " + name);
            long bytes;
            try {
                bytes = HeaderInput.pad(Math.multiplyExact(elems, t.size));
            } catch (ArithmeticException e) {
                throw in.bad(what + " " + name + " has " + elems + " elements of " + t.size + " bytes: the size overflows");
            }
            in.skip(bytes, "the values of " + what + " " + name);
        }
    }

    private static List<CdfVariable> variables(HeaderInput in, boolean wide, int version, long[] dims) {
        int n = count(in, wide, NC_VARIABLE, "variable", MIN_VAR);
        List<CdfVariable> vars = new ArrayList<>(n);
        long heap = 0;
        for (int i = 0; i < n; i++) {
            String name = in.name(wide, "the name of variable " + i);
            String what = "variable '" + name + "'";
            long ndims = in.nonNegative(wide, "the dimension count of " + what);
            if (ndims > MAX_VAR_DIMS || ndims > in.remaining() / (wide ? 8 : 4)) {
                throw in.bad(what + " has " + ndims + " dimensions (limit " + MAX_VAR_DIMS + ", and the "
                        + in.remaining() + " bytes left in the file)");
            }
            heap += 128 + 2L * name.length() + 8 * ndims;
            if (heap > MAX_HEADER_HEAP) {
                throw in.bad("the names and shapes of variables 0.." + i + " would take more than " + MAX_HEADER_HEAP
                        + " bytes of heap (limit)");
            }
            long[] shape = new long[(int) ndims];
            boolean record = false;
            for (int d = 0; d < ndims; d++) {
                long id = in.nonNegative(wide, "dimension id " + d + " of " + what);
                if (id >= dims.length) {
                    throw in.bad(what + " names dimension id " + id + " (the file has " + dims.length + " dimensions)");
                }
                shape[d] = dims[(int) id];
                if (shape[d] == 0) { // only the record dimension has length 0
                    if (d > 0) {
                        throw in.bad(what + " has the record (unlimited) dimension at position " + d + ", not first");
                    }
                    record = true;
                }
            }
            attributes(in, wide, version, "attribute of " + what);
            CdfType type = type(in, version, what);
            in.number(wide, "the vsize of " + what); // recomputed from the shape below
            long begin = in.number(version != 1, "the begin offset of " + what);
            if (begin < 0) {
                throw in.bad(what + " begins at offset " + begin + " (negative)");
            }
            vars.add(variable(in, name, type, shape, record, begin));
        }
        return vars;
    }

    private static CdfVariable variable(HeaderInput in, String name, CdfType type, long[] shape, boolean record,
            long begin) {
        try {
            long row = type.size;
            for (int d = 1; d < shape.length; d++) {
                row = Math.multiplyExact(row, shape[d]);
            }
            long len = record || shape.length == 0 ? row : Math.multiplyExact(row, shape[0]);
            if (shape.length == 0) {
                row = 0;
            }
            return new CdfVariable(name, type, shape, record, begin, HeaderInput.pad(len), row);
        } catch (ArithmeticException e) {
            String dims = java.util.Arrays.toString(java.util.Arrays.copyOf(shape, Math.min(shape.length, 8)));
            throw in.bad("variable '" + name + "' has the shape " + (shape.length > 8 ? dims.replace("]", ", ...]") : dims)
                    + " of " + type.size + "-byte elements: the size overflows");
        }
    }

    /**
     * The bytes of a record: the sum of the record variables' padded parts, except for a lone
     * record variable, whose records are not padded (as the NetCDF library lays them out).
     */
    private static long recsize(List<CdfVariable> vars) {
        long sum = 0;
        CdfVariable first = null;
        for (CdfVariable v : vars) {
            if (v.record()) {
                first = first == null ? v : first;
                sum = Math.addExact(sum, v.len());
            }
        }
        return first != null && sum == first.len() ? first.rowBytes() : sum;
    }

    /** The records a streaming file holds: whole records from the first record variable's offset to the end. */
    private static long streamingRecords(List<CdfVariable> vars, long recsize, long size) {
        for (CdfVariable v : vars) {
            if (v.record()) {
                return recsize == 0 || v.begin() >= size ? 0 : (size - v.begin()) / recsize;
            }
        }
        return 0;
    }

    /** CDF-1 and CDF-2 describe variables up to 4 GiB, except the last fixed-size and the last record variable. */
    private static void checkSizes(HeaderInput in, int version, List<CdfVariable> vars) {
        if (version == 5) {
            return;
        }
        CdfVariable lastFixed = null;
        CdfVariable lastRecord = null;
        for (CdfVariable v : vars) {
            if (v.record()) {
                lastRecord = v;
            } else {
                lastFixed = v;
            }
        }
        for (CdfVariable v : vars) {
            if (v.len() > MAX_CLASSIC_VAR && v != lastFixed && v != lastRecord) {
                throw in.bad("variable '" + v.name() + "' has " + v.len() + (v.record() ? " bytes per record" : " bytes")
                        + ": too large for CDF-" + version + " (limit " + MAX_CLASSIC_VAR
                        + " but for the last variable; use CDF-5)");
            }
        }
    }

    private static CdfType type(HeaderInput in, int version, String what) {
        int code = in.int32("the type of " + what);
        CdfType t = CdfType.of(code, version);
        if (t == null) {
            throw in.bad(what + " has type code " + code + ", not a type of CDF-" + version + (version == 5 ? " (1 to 11)"
                    : " (1 to 6)"));
        }
        return t;
    }

    /** The count of a list tagged {@code tag}, or 0 for an absent list. */
    private static int count(HeaderInput in, boolean wide, int tag, String what, int minBytes) {
        int t = in.int32("the tag of the " + what + " list");
        long n = in.nonNegative(wide, "the " + what + " count");
        if (t == 0 && n == 0) {
            return 0;
        }
        if (t != tag) {
            throw in.bad("the " + what + " list has tag " + t + " (expected: " + tag + ", or 0 with a count of 0)");
        }
        if (n > MAX_ENTRIES || n > in.remaining() / minBytes) {
            throw in.bad(n + " " + what + "s (limit " + MAX_ENTRIES + ", and the " + in.remaining()
                    + " bytes left in the file hold at most " + in.remaining() / minBytes + ")");
        }
        return (int) n;
    }
}
