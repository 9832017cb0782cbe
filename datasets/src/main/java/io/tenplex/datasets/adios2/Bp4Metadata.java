package io.tenplex.datasets.adios2;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * The variables of a BP4 directory, from its metadata: {@code md.idx} (a 64-byte header, the BP
 * version 4 at byte 37, then a 64-byte record per step and writer: the step, the rank, and where the
 * step's process-group, variable and attribute indices lie in {@code md.0}); in {@code md.0}, per
 * step, the process-group index (each group's row-/column-major flag) and the variable index: for
 * each variable a header (its name and BP type) and one characteristics set per block (see
 * {@link Bp4Block}). Not thread-safe.
 */
final class Bp4Metadata {
    static final int RECORD_BYTES = 64;

    private final MetaBytes md;
    private final DataFiles data;
    private final VariableTable table = new VariableTable();
    private long parsed; // bytes of md.0 the records named so far

    private Bp4Metadata(MetaBytes md, DataFiles data) {
        this.md = md;
        this.data = data;
    }

    /** The variables of the directory whose {@code md.idx} and {@code md.0} are given. */
    static Map<String, Adios2Variable> read(MetaBytes idx, MetaBytes md, DataFiles data) {
        idx.need(0, RECORD_BYTES, "the header");
        if (!new String(idx.bytes, 0, 8, StandardCharsets.US_ASCII).equals("ADIOS-BP")) {
            throw idx.bad("the header does not begin with ADIOS-BP");
        }
        if (idx.u8(36, "the endianness") != 0) {
            throw idx.bad("the endianness is big-endian (only little-endian files are read)");
        }
        if ((idx.length() - RECORD_BYTES) % RECORD_BYTES != 0) {
            throw idx.bad("truncated: its " + idx.length() + " bytes are not a header and whole 64-byte step records");
        }
        TreeMap<Long, java.util.List<Long>> steps = new TreeMap<>(); // step -> record positions
        for (long pos = RECORD_BYTES; pos < idx.length(); pos += RECORD_BYTES) {
            long step = idx.size(pos, Long.MAX_VALUE, "the step of the record at byte " + pos);
            steps.computeIfAbsent(step, s -> new java.util.ArrayList<>()).add(pos);
        }
        Bp4Metadata m = new Bp4Metadata(md, data);
        int s = 0;
        for (java.util.List<Long> records : steps.values()) {
            for (long pos : records) {
                m.step(idx, pos, s);
            }
            s++;
        }
        return m.table.variables();
    }

    private void step(MetaBytes idx, long rec, int s) {
        String what = "the index record at byte " + rec;
        long pgStart = idx.size(rec + 16, Long.MAX_VALUE, what + ": its process-group index start");
        long varStart = idx.size(rec + 24, Long.MAX_VALUE, what + ": its variable index start");
        long attrStart = idx.size(rec + 32, Long.MAX_VALUE, what + ": its attribute index start");
        long stepEnd = idx.size(rec + 40, Long.MAX_VALUE, what + ": its step's end");
        if (pgStart > varStart || varStart > attrStart || attrStart > stepEnd) {
            throw idx.bad(what + " has its indices out of order (" + pgStart + ", " + varStart + ", " + attrStart + ", "
                    + stepEnd + ")");
        }
        if (stepEnd > md.length()) {
            throw md.bad("truncated: step " + s + " ends at byte " + stepEnd + " (as md.idx says) but it has "
                    + md.length());
        }
        parsed += stepEnd - pgStart;
        if (parsed > md.length()) {
            throw idx.bad(what + " names bytes " + pgStart + ".." + stepEnd + " of md.0, which the records before it "
                    + "named too (the steps' metadata overlap: each would be read again)");
        }
        processGroups(pgStart, s);
        long count = md.u32(varStart, "the variable count of step " + s);
        long length = md.size(varStart + 4, attrStart - varStart - 12, "the variable index length of step " + s);
        long pos = varStart + 12;
        long end = pos + length;
        for (long i = 0; i < count && pos < end; i++) {
            long len = md.u32(pos, "the length of variable entry " + i + " of step " + s);
            if (len > end - pos - 4) {
                throw md.bad("variable entry " + i + " of step " + s + " has length " + len + ", beyond its index");
            }
            variable(pos + 4, pos + 4 + len, s);
            pos += 4 + len;
        }
        if (pos != end) {
            throw md.bad("the variable index of step " + s + " does not end where its length says");
        }
    }

    private void processGroups(long pgStart, int s) {
        long count = md.size(pgStart, md.length(), "the process-group count of step " + s);
        long pos = pgStart + 16;
        for (long i = 0; i < count; i++) {
            String what = "process group " + i + " of step " + s;
            int len = md.u16(pos, what + ": its length");
            int nameLen = md.u16(pos + 2, what + ": its name length");
            md.need(pos + 2, len, what);
            if (nameLen + 3 > len || md.u8(pos + 4 + nameLen, what + ": its column-major flag") != 'n') {
                throw md.bad(what + " is not row-major (its writer was column-major; Fortran order is refused)");
            }
            pos += 2 + len;
        }
    }

    private void variable(long pos, long end, int s) {
        String what = "a variable of step " + s + " at byte " + pos;
        pos += 4; // member id
        int groupLen = md.u16(pos, what + ": its group name length");
        pos += 2 + groupLen;
        int nameLen = md.u16(pos, what + ": its name length");
        md.need(pos + 2, nameLen, what + ": its name");
        String name = new String(md.bytes, (int) pos + 2, nameLen, StandardCharsets.UTF_8);
        pos += 2 + nameLen + 2; // the order and an unused byte
        int code = md.u8(pos, "the type of variable '" + name + "'");
        long sets = md.size(pos + 1, end - pos, "the block count of variable '" + name + "'");
        Adios2Type type = Bp4Block.type(code);
        if (type == null) {
            throw md.bad("variable '" + name + "' has an unknown type code " + code);
        }
        if (!type.served()) {
            table.refuse(name, type, "its type " + type.adiosName + " is not served (only fixed-size primitive types)");
            return;
        }
        pos += 9;
        for (long b = 0; b < sets; b++) {
            pos = Bp4Block.parse(md, pos, end, name, type, s, table, data);
        }
        if (pos != end) {
            throw md.bad("variable '" + name + "' in step " + s + " does not end where its entry length says");
        }
    }
}
