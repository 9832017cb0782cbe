package io.tenplex.ptc.data;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The samples of a dataset: an ordered list of files, each with the half-open byte ranges of its
 * samples. Samples are numbered globally by flattening the files in index order. Immutable.
 *
 * <p>Text form (the prototype's): line 1 holds the number of files; per file a line
 * {@code <url> <n>} followed by n lines {@code <begin> <end>}. URLs are local paths, {@code file://}
 * or {@code http(s)://} URLs; they must not contain whitespace.
 */
public final class DatasetIndex {
    /** One file of the index and its samples' byte ranges ({@code begins[i]} to {@code ends[i]}). */
    public record File(String url, long[] begins, long[] ends) {
        public File {
            if (url.isEmpty() || url.chars().anyMatch(Character::isWhitespace)) {
                throw new IllegalArgumentException("file url must be non-empty without whitespace: '" + url + "'");
            }
            if (begins.length != ends.length) {
                throw new IllegalArgumentException("begins and ends differ in length for " + url);
            }
            for (int i = 0; i < begins.length; i++) {
                if (begins[i] < 0 || ends[i] < begins[i]) {
                    throw new IllegalArgumentException("sample " + i + " of " + url + " has range " + begins[i] + " "
                            + ends[i] + " (expected: 0 <= begin <= end)");
                }
            }
        }

        public int samples() {
            return begins.length;
        }

        /** The file of an array whose samples are its {@code rows} rows of {@code rowBytes} bytes each, in order. */
        public static File ofRows(String url, int rows, long rowBytes) {
            long[] begins = new long[rows];
            long[] ends = new long[rows];
            for (int i = 0; i < rows; i++) {
                begins[i] = Math.multiplyExact(i, rowBytes);
                ends[i] = begins[i] + rowBytes;
            }
            return new File(url, begins, ends);
        }
    }

    private final List<File> files;
    private final long[] firstSample; // global id of each file's first sample, plus the total at the end

    public DatasetIndex(List<File> files) {
        this.files = List.copyOf(files);
        this.firstSample = new long[files.size() + 1];
        for (int f = 0; f < files.size(); f++) {
            firstSample[f + 1] = firstSample[f] + files.get(f).samples();
        }
        if (firstSample[files.size()] > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("index has " + firstSample[files.size()] + " samples (at most "
                    + Integer.MAX_VALUE + ")");
        }
    }

    public List<File> files() {
        return files;
    }

    /** Number of samples over all files. */
    public int size() {
        return (int) firstSample[files.size()];
    }

    /** Index of the file holding global sample {@code id}. */
    public int fileOf(int id) {
        checkId(id);
        int f = Arrays.binarySearch(firstSample, id);
        if (f < 0) {
            return -f - 2;
        }
        while (f + 1 < firstSample.length && firstSample[f + 1] == id) {
            f++; // skip files without samples
        }
        return f;
    }

    /** Position of sample {@code id} within its file. */
    public int offsetInFile(int id, int file) {
        return (int) (id - firstSample[file]);
    }

    public long begin(int id) {
        int f = fileOf(id);
        return files.get(f).begins()[offsetInFile(id, f)];
    }

    /** Byte length of sample {@code id}. */
    public long length(int id) {
        int f = fileOf(id);
        int i = offsetInFile(id, f);
        return files.get(f).ends()[i] - files.get(f).begins()[i];
    }

    private void checkId(int id) {
        if (id < 0 || id >= size()) {
            throw new IndexOutOfBoundsException("sample " + id + " out of range (expected: 0 <= id < " + size() + ")");
        }
    }

    /** A malformed text form: {@link #line()} is where, the message also says what. */
    public static final class FormatException extends IOException {
        private final int line;

        FormatException(int line, String message) {
            super(message);
            this.line = line;
        }

        /** The 1-based line of the first error. */
        public int line() {
            return line;
        }
    }

    /** Parses the text form; errors ({@link FormatException}) name the line. */
    public static DatasetIndex read(Reader in) throws IOException {
        BufferedReader r = new BufferedReader(in);
        int[] line = {0};
        String head = next(r, line, "the number of files");
        int nfiles = parseInt(head, line[0], "number of files");
        List<File> files = new ArrayList<>();
        for (int f = 0; f < nfiles; f++) {
            String[] parts = next(r, line, "file " + f + "'s '<url> <n>' line").trim().split("\\s+");
            if (parts.length != 2) {
                throw new FormatException(line[0], "index line " + line[0] + ": expected '<url> <n>', got "
                        + parts.length + " fields");
            }
            files.add(readFile(r, line, parts[0], parseInt(parts[1], line[0], "sample count")));
        }
        for (String rest; (rest = r.readLine()) != null; ) {
            line[0]++;
            if (!rest.isBlank()) {
                throw new FormatException(line[0], "index line " + line[0] + ": unexpected content after the last file");
            }
        }
        try {
            return new DatasetIndex(files);
        } catch (IllegalArgumentException e) {
            throw new FormatException(line[0], e.getMessage());
        }
    }

    /** The n sample lines of one file; the arrays grow with the lines read, not with the n announced. */
    private static File readFile(BufferedReader r, int[] line, String url, int n) throws IOException {
        long[] begins = new long[Math.min(n, 1 << 12)];
        long[] ends = new long[begins.length];
        for (int i = 0; i < n; i++) {
            String[] be = next(r, line, "sample " + i + " of file '" + url + "'").trim().split("\\s+");
            if (be.length != 2) {
                throw new FormatException(line[0], "index line " + line[0] + ": expected '<begin> <end>'");
            }
            if (i == begins.length) {
                begins = Arrays.copyOf(begins, (int) Math.min(n, 2L * i));
                ends = Arrays.copyOf(ends, begins.length);
            }
            begins[i] = parseLong(be[0], line[0]);
            ends[i] = parseLong(be[1], line[0]);
            if (begins[i] < 0 || ends[i] < begins[i]) {
                throw new FormatException(line[0], "index line " + line[0] + ": range " + begins[i] + " " + ends[i]
                        + " (expected: 0 <= begin <= end)");
            }
        }
        return new File(url, begins, ends);
    }

    /** Writes the text form. */
    public void write(Writer out) throws IOException {
        StringBuilder b = new StringBuilder();
        b.append(files.size()).append('\n');
        for (File f : files) {
            b.append(f.url()).append(' ').append(f.samples()).append('\n');
            for (int i = 0; i < f.samples(); i++) {
                b.append(f.begins()[i]).append(' ').append(f.ends()[i]).append('\n');
                if (b.length() > 1 << 16) {
                    out.write(b.toString());
                    b.setLength(0);
                }
            }
        }
        out.write(b.toString());
        out.flush();
    }

    private static String next(BufferedReader r, int[] line, String what) throws IOException {
        String s = r.readLine();
        line[0]++;
        if (s == null) {
            throw new FormatException(line[0], "index ends at line " + line[0] + " before " + what);
        }
        return s;
    }

    private static int parseInt(String s, int line, String what) throws IOException {
        try {
            int v = Integer.parseInt(s.trim());
            if (v < 0) {
                throw new NumberFormatException();
            }
            return v;
        } catch (NumberFormatException e) {
            throw new FormatException(line, "index line " + line + ": " + what + " '" + s.trim() + "' is not a count");
        }
    }

    private static long parseLong(String s, int line) throws IOException {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new FormatException(line, "index line " + line + ": '" + s + "' is not an offset");
        }
    }
}
