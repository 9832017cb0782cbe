package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.store.Npy;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IndexBuildersTest {
    @TempDir
    Path tmp;

    @Test
    void lines_includeTheirNewline_andALastLineWithoutOne() throws Exception {
        Path f = Files.writeString(tmp.resolve("t.txt"), "ab\n\ncde\nf");
        DatasetIndex.File e = IndexBuilders.build(f, IndexBuilders.Format.LINES, 0);
        assertArrayEquals(new long[] {0, 3, 4, 8}, e.begins());
        assertArrayEquals(new long[] {3, 4, 8, 9}, e.ends());
    }

    @Test
    void npyRows_skipTheHeader() throws Exception {
        byte[] header = Npy.header(TensorMeta.of(DType.F32, 5, 3));
        Path f = tmp.resolve("a.npy");
        Files.write(f, ByteBuffer.allocate(header.length + 60).put(header).array());
        DatasetIndex.File e = IndexBuilders.build(f, IndexBuilders.Format.NPY, 0);
        assertEquals(5, e.samples());
        assertEquals(header.length + 12, e.begins()[1]);
        assertEquals(header.length + 60, e.ends()[4]);
        Files.write(f, ByteBuffer.allocate(header.length + 50).put(header).array());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> IndexBuilders.build(f, IndexBuilders.Format.NPY, 0))
                .getMessage().contains("the header says"));
    }

    @Test
    void tfrecords_coverTheFraming_andTruncationIsAnError() throws Exception {
        ByteBuffer b = ByteBuffer.allocate(100).order(ByteOrder.LITTLE_ENDIAN);
        for (String rec : new String[] {"hello", "tfrecord!"}) {
            b.putLong(rec.length()).putInt(0).put(rec.getBytes(StandardCharsets.US_ASCII)).putInt(0);
        }
        Path f = tmp.resolve("r.tfrecord");
        Files.write(f, java.util.Arrays.copyOf(b.array(), b.position()));
        DatasetIndex.File e = IndexBuilders.build(f, IndexBuilders.Format.TFRECORD, 0);
        assertArrayEquals(new long[] {0, 21}, e.begins());
        assertArrayEquals(new long[] {21, 46}, e.ends());
        Files.write(f, java.util.Arrays.copyOf(b.array(), 40));
        assertThrows(IllegalArgumentException.class, () -> IndexBuilders.build(f, IndexBuilders.Format.TFRECORD, 0));
    }

    @Test
    void records_mustDivideTheFile() throws Exception {
        Path f = Files.write(tmp.resolve("r.bin"), new byte[30]);
        assertEquals(3, IndexBuilders.build(f, IndexBuilders.Format.RECORDS, 10).samples());
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> IndexBuilders.build(f, IndexBuilders.Format.RECORDS, 7)).getMessage().contains("not a multiple"));
    }
}
