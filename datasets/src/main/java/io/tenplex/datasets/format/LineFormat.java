package io.tenplex.datasets.format;

import java.io.IOException;
import java.io.InputStream;

/** {@code lines}: one sample per line, its {@code \n} included; a last line without one is a sample too. */
final class LineFormat implements SampleFormat {
    static final String NAME = "lines";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Samples find(InputStream in, long size, String source) throws IOException {
        Samples.Builder out = new Samples.Builder();
        byte[] buf = new byte[1 << 16];
        long pos = 0;
        long start = 0;
        for (int n; pos < size && (n = in.read(buf, 0, (int) Math.min(buf.length, size - pos))) > 0; ) {
            for (int i = 0; i < n; i++) {
                if (buf[i] == '\n') {
                    out.add(start, pos + i + 1);
                    start = pos + i + 1;
                }
            }
            pos += n;
        }
        if (pos < size) {
            throw new IllegalArgumentException(source + " ends at byte " + pos + ", before its size " + size
                    + " (did it change while it was read?)");
        }
        if (start < pos) {
            out.add(start, pos); // a last line without its newline
        }
        return out.build();
    }
}
