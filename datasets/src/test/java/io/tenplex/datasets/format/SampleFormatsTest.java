package io.tenplex.datasets.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.data.DatasetIndex;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SampleFormatsTest {
    @TempDir
    Path tmp;

    @Test
    void formats_byNameInAnyCase_withTheirArgument() {
        assertEquals("records:<bytes>, npy, tfrecord, lines", SampleFormats.usage());
        for (String name : new String[] {"records:4", "NPY", "tfrecord", "Lines"}) {
            assertEquals(name.split(":")[0].toLowerCase(java.util.Locale.ROOT), SampleFormats.parse(name).name());
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SampleFormats.parse("parquet")).getMessage()
                .contains("unknown format 'parquet' (records:<bytes>, npy, tfrecord, lines)"));
    }

    @Test
    void anIndexEntry_namesTheFileByItsAbsolutePath() throws Exception {
        Path f = Files.writeString(tmp.resolve("t.txt"), "a\nbc\n");
        DatasetIndex.File e = SampleFormats.index(f, SampleFormats.parse("lines"));
        assertEquals(f.toAbsolutePath().toString(), e.url());
        assertEquals(2, e.samples());
        assertEquals(5, e.ends()[1]);
    }
}
