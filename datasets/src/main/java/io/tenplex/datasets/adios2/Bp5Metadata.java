package io.tenplex.datasets.adios2;

import java.util.HashMap;
import java.util.Map;

/**
 * The variables of a BP5 directory, from its metadata: the FFS formats of {@code mmd.0} (each a
 * format ID and the format's representation, their lengths first), and, for each step the index
 * gives, each writer's FFS-encoded record in {@code md.0} (the step's total size, the writers'
 * metadata sizes, their attribute sizes, then the records). A record's first fields are a bit field
 * of the variables present and the writer's data size; each further field is a variable, its name
 * {@code BP<kind>_<element size>_<type>_<name>}: a global array's field embeds a {@code MetaArray}
 * struct (dimensions, blocks, shape, counts, offsets, and each block's place in the writer's data);
 * a {@code MetaArrayOp} struct means an operator (compression). Not thread-safe.
 */
final class Bp5Metadata {
    /** The most dimensions of a variable. */
    static final int MAX_DIMS = 64;

    private final Bp5Index index;
    private final MetaBytes md;
    private final DataFiles data;
    private final Map<String, FfsFormat> formats = new HashMap<>();
    private final Map<FfsFormat, Integer> firstVariable = new java.util.IdentityHashMap<>();
    private final VariableTable table = new VariableTable();
    private long parsed; // bytes of md.0 the steps named so far

    private Bp5Metadata(Bp5Index index, MetaBytes md, DataFiles data) {
        this.index = index;
        this.md = md;
        this.data = data;
    }

    /** The variables of the directory whose {@code md.idx}, {@code md.0} and {@code mmd.0} are given. */
    static Map<String, Adios2Variable> read(MetaBytes idx, MetaBytes md, MetaBytes mmd, DataFiles data) {
        Bp5Metadata m = new Bp5Metadata(Bp5Index.read(idx), md, data);
        m.formats(mmd);
        for (int s = 0; s < m.index.steps.size(); s++) {
            m.step(s, m.index.steps.get(s));
        }
        return m.table.variables();
    }

    private void formats(MetaBytes mmd) {
        long pos = 0;
        while (pos < mmd.length()) {
            String what = "the format entry at byte " + pos;
            long idLen = mmd.size(pos, mmd.length(), what + ": its ID length");
            long repLen = mmd.size(pos + 8, mmd.length(), what + ": its length");
            if (idLen != FfsRecord.ID_BYTES) {
                throw mmd.bad(what + " has an ID of " + idLen + " bytes (expected " + FfsRecord.ID_BYTES + ")");
            }
            mmd.need(pos + 16, idLen + repLen, what);
            String id = FfsRecord.id(mmd, pos + 16, what);
            formats.put(id, FfsFormat.parse(mmd, pos + 16 + idLen, repLen));
            pos += 16 + idLen + repLen;
        }
    }

    private void step(int s, Bp5Index.Step step) {
        String what = "the metadata of step " + s;
        md.need(step.mdPos(), step.mdSize(), what);
        parsed += step.mdSize();
        if (parsed > md.length()) {
            throw md.bad(what + " at bytes " + step.mdPos() + "+" + step.mdSize() + " overlap those of the steps "
                    + "before it (md.idx names them twice: each would be read again)");
        }
        int writers = step.writers();
        long pos = step.mdPos() + 8 + 16L * writers;
        long end = step.mdPos() + step.mdSize();
        md.need(step.mdPos(), 8 + 16L * writers, what + ": its sizes");
        for (int w = 0; w < writers; w++) {
            long size = md.size(step.mdPos() + 8 + 8L * w, end - pos, what + ": the size of writer " + w);
            String rw = "the metadata of writer " + w + " in step " + s;
            String id = FfsRecord.id(md, pos, rw);
            FfsFormat f = formats.get(id);
            if (f == null) {
                throw md.bad(rw + " has format ID " + id + ", which mmd.0 does not have");
            }
            record(FfsRecord.at(md, pos, size, f, rw), s, w, step);
            pos += size;
        }
    }

    private void record(FfsRecord r, int s, int w, Bp5Index.Step step) {
        FfsFormat f = r.format;
        FfsFormat.Field count = f.field("BitFieldCount");
        FfsFormat.Field bits = f.field("BitField");
        if (count == null || bits == null || count.size() != 8 || bits.size() != 8) {
            throw r.bad("its format " + f.name + " has no BitFieldCount and BitField");
        }
        long n = r.number(count.offset(), Integer.MAX_VALUE, "BitFieldCount");
        long[] bitField = r.words(bits.offset(), n, "BitField");
        if (bitField == null) {
            return;
        }
        int first = firstVariable.computeIfAbsent(f, Bp5Metadata::firstVariable);
        int vars = f.fields.size() - first;
        // only the bits set: the work is the record's, not that of every field of its format per record
        for (int word = 0; word < bitField.length && 64L * word < vars; word++) {
            for (long set = bitField[word]; set != 0; set &= set - 1) {
                int c = 64 * word + Long.numberOfTrailingZeros(set);
                if (c < vars) {
                    Bp5Field.of(f.fields.get(first + c), r).add(table, s, w, step, data);
                }
            }
        }
    }

    /** The index of the first variable field of {@code f}: after BitFieldCount, BitField and DataBlockSize. */
    private static int firstVariable(FfsFormat f) {
        int first = 0;
        while (first < f.fields.size() && (f.fields.get(first).name().startsWith("BitField")
                || f.fields.get(first).name().startsWith("DataBlockSize"))) {
            first++;
        }
        return first;
    }
}
