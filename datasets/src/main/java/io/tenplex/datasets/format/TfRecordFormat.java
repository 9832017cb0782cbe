package io.tenplex.datasets.format;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * {@code tfrecord}: one sample per TFRecord record, its framing included (length, its CRC, data,
 * data CRC), so that shard files made of these samples are valid TFRecord files.
 */
final class TfRecordFormat implements SampleFormat {
    static final String NAME = "tfrecord";
    /** The length (int64) and its CRC (int32) before the data. */
    private static final int HEADER = 12;
    /** The data's CRC (int32) after it. */
    private static final int FOOTER = 4;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Samples find(InputStream in, long size, String source) throws IOException {
        Samples.Builder out = new Samples.Builder();
        byte[] header = new byte[HEADER];
        long pos = 0;
        while (pos < size) {
            if (in.readNBytes(header, 0, HEADER) != HEADER) {
                throw new IllegalArgumentException(source + ": truncated TFRecord header at byte " + pos);
            }
            long len = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).getLong();
            long end = pos + HEADER + len + FOOTER;
            if (len < 0 || end > size || end < pos) {
                throw new IllegalArgumentException(source + ": TFRecord at byte " + pos + " claims " + len
                        + " bytes, past the end of the file (" + size + ")");
            }
            in.skipNBytes(len + FOOTER);
            out.add(pos, end);
            pos = end;
        }
        return out.build();
    }
}
