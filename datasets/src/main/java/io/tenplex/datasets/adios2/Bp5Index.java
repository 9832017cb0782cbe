package io.tenplex.datasets.adios2;

import java.util.ArrayList;
import java.util.List;

/**
 * The index file {@code md.idx} of a BP5 directory, parsed and checked: the 64-byte header (the
 * {@code ADIOS-BP} tag, little-endian, BP version 5.2, row-major, steps not flattened) and its
 * records: writer maps ({@code 'w'}: the writers and the subfile {@code data.N} each writes) and
 * steps ({@code 's'}: where the step's metadata lies in {@code md.0} and, per writer, where its data
 * lie in its subfile, as flushes). Immutable.
 */
final class Bp5Index {
    static final int HEADER_BYTES = 64;
    /** The most writers of one step. */
    static final int MAX_WRITERS = 1 << 20;

    /**
     * One step.
     *
     * @param mdPos where its metadata begin in {@code md.0}
     * @param mdSize their bytes
     * @param subfiles the subfile of each writer
     * @param flushes per writer: {@code pos, size} of each flush then the position of the rest
     */
    record Step(long mdPos, long mdSize, int[] subfiles, long[][] flushes) {
        int writers() {
            return subfiles.length;
        }
    }

    final List<Step> steps;

    private Bp5Index(List<Step> steps) {
        this.steps = steps;
    }

    /** Parses {@code idx}, the whole of {@code md.idx}. */
    static Bp5Index read(MetaBytes idx) {
        header(idx);
        List<Step> steps = new ArrayList<>();
        int[] subfiles = null;
        long pos = HEADER_BYTES;
        while (pos < idx.length()) {
            int id = idx.u8(pos, "the record id at byte " + pos);
            long len = idx.size(pos + 1, idx.length(), "the length of record " + (char) id + " at byte " + pos);
            long body = pos + 9;
            idx.need(body, len, "record '" + (char) id + "' at byte " + pos);
            if (id == 'w') {
                subfiles = writerMap(idx, body, len);
            } else if (id == 's') {
                if (subfiles == null) {
                    throw idx.bad("step record at byte " + pos + " comes before any writer map");
                }
                steps.add(step(idx, body, len, subfiles, steps.size()));
            } else {
                throw idx.bad("unknown record id " + id + " at byte " + pos);
            }
            pos = body + len;
        }
        return new Bp5Index(List.copyOf(steps));
    }

    private static void header(MetaBytes idx) {
        idx.need(0, HEADER_BYTES, "the header");
        if (!new String(idx.bytes, 0, 8, java.nio.charset.StandardCharsets.US_ASCII).equals("ADIOS-BP")) {
            throw idx.bad("the header does not begin with ADIOS-BP");
        }
        if (idx.u8(36, "the endianness") != 0) {
            throw idx.bad("the endianness is big-endian (only little-endian files are read)");
        }
        int major = idx.u8(37, "the BP version");
        int minor = idx.u8(38, "the BP minor version");
        if (major != 5 || minor != 2) {
            throw idx.bad("the BP version is " + major + "." + minor + " (BP5 reads 5.2)");
        }
        if (idx.u8(40, "the column-major flag") != 'n') {
            throw idx.bad("the column-major flag says the writer was column-major (Fortran order is refused)");
        }
        if (idx.u8(41, "the flatten-steps flag") != 0) {
            throw idx.bad("the flatten-steps flag is set (refused: steps would not be steps)");
        }
    }

    private static int[] writerMap(MetaBytes idx, long body, long len) {
        long writers = idx.size(body, MAX_WRITERS, "the writer count of the writer map at byte " + body);
        if (len != 24 + 8 * writers) {
            throw idx.bad("the writer map at byte " + body + " has length " + len + " for " + writers + " writers");
        }
        long subfileCount = idx.size(body + 16, MAX_WRITERS, "the subfile count of the writer map");
        int[] subfiles = new int[(int) writers];
        for (int w = 0; w < writers; w++) {
            subfiles[w] = (int) idx.size(body + 24 + 8L * w, Math.max(0, subfileCount - 1),
                    "the subfile of writer " + w + " in the writer map at byte " + body);
        }
        return subfiles;
    }

    private static Step step(MetaBytes idx, long body, long len, int[] subfiles, int n) {
        String what = "step " + n;
        long mdPos = idx.size(body, Long.MAX_VALUE, "the metadata position of " + what);
        long mdSize = idx.size(body + 8, Long.MAX_VALUE, "the metadata size of " + what);
        long flushCount = idx.size(body + 16, len / 16, "the flush count of " + what);
        long per = 2 * flushCount + 1;
        long need;
        try {
            need = Math.addExact(24, Math.multiplyExact(Math.multiplyExact(per, subfiles.length), 8));
        } catch (ArithmeticException e) {
            need = Long.MAX_VALUE;
        }
        if (len != need) {
            throw idx.bad("the record of " + what + " has length " + len + " for " + subfiles.length + " writers and "
                    + flushCount + " flushes");
        }
        long[][] flushes = new long[subfiles.length][(int) per];
        for (int w = 0; w < subfiles.length; w++) {
            for (int i = 0; i < per; i++) {
                flushes[w][i] = idx.size(body + 24 + 8 * (w * per + i), Long.MAX_VALUE, "the data position "
                        + (i / 2) + " of writer " + w + " in " + what);
            }
        }
        return new Step(mdPos, mdSize, subfiles.clone(), flushes);
    }
}
