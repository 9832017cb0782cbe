package io.tenplex.datasets.adios2;

import java.util.List;

/**
 * One variable of an ADIOS2 file as its metadata describe it: its type, its global shape (the same in
 * every step it is in), and, per step it is in (in step order), its blocks; or, for a variable this
 * reader does not serve (a local array, a global value, a string, a shape that changes, an operator),
 * why it is refused. Immutable.
 *
 * @param name its name
 * @param type its element type
 * @param shape its global shape
 * @param steps the blocks of each step it is in
 * @param refusal null, or why it is not served
 */
record Adios2Variable(String name, Adios2Type type, long[] shape, List<List<Block>> steps, String refusal) {
    /**
     * One block a writer wrote of one step: where it lies in the global array and in the file.
     *
     * @param subfile the data file ({@code data.<subfile>})
     * @param pos the offset of its bytes (row-major over {@code count}) in that file
     * @param start its offset in the global array, per dimension
     * @param count its extent, per dimension
     */
    record Block(int subfile, long pos, long[] start, long[] count) {}

    static Adios2Variable refused(String name, Adios2Type type, String why) {
        return new Adios2Variable(name, type, new long[0], List.of(), why);
    }
}
