package io.tenplex.ptc.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;

class DataPartitionTest {
    @Test
    void order_matchesTheDocumentedAlgorithm() {
        // Pinned values: docs/DATASETS.md and the Python reader's test compute the same permutation.
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, SampleOrder.of(10, 42, 0, false));
        assertArrayEquals(new int[] {0, 9, 5, 8, 6, 4, 7, 2, 1, 3}, SampleOrder.of(10, 42, 0, true));
        assertArrayEquals(new int[] {4, 2, 5, 6, 1, 3, 9, 8, 7, 0}, SampleOrder.of(10, 42, 1, true));
    }

    @Test
    void rankSlices_followThePrototypeRule_whenNDoesNotDivideG() {
        DataPartition p = new DataPartition(25, new MountParams(0, 10, 4, 1, false, 4));
        assertEquals(2, p.batches());
        assertEquals(5, p.dropped());
        assertEquals(List.of(3, 3, 3, 1), List.of(p.localBatch(0), p.localBatch(1), p.localBatch(2), p.localBatch(3)));
        assertArrayEquals(new int[] {9, 19}, p.rankSamples(3));
        assertArrayEquals(new int[] {3, 4, 5, 13, 14, 15}, p.rankSamples(1));
        assertEquals(2, p.shardFiles(1)); // 4 + 2 samples, no empty trailing file
        assertArrayEquals(new int[] {14, 15}, p.shardSamples(p.rankSamples(1), 1));
        DataPartition six = new DataPartition(25, new MountParams(0, 10, 6, 1, false, 4));
        assertEquals(0, six.localBatch(5));
        assertEquals(0, six.shardFiles(5));
    }

    @Test
    void progress_pastAnEpoch_usesTheNextEpochsOrder() {
        DataPartition p = new DataPartition(25, new MountParams(30, 10, 1, 7, true, 4));
        assertEquals(1, p.epoch());
        assertEquals(1, p.batches());
        assertArrayEquals(java.util.Arrays.copyOfRange(SampleOrder.of(25, 7, 1, true), 10, 20), p.globalBatch(0));
    }

    @Test
    void badParams_areRejectedWithTheValues() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new MountParams(5, 10, 2, 0, true, 4))
                .getMessage().contains("not a multiple"));
        assertThrows(IllegalArgumentException.class, () -> new MountParams(0, 0, 2, 0, true, 4));
        assertThrows(IllegalArgumentException.class, () -> new MountParams(0, 4, 0, 0, true, 4));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> new DataPartition(3, new MountParams(0, 4, 1, 0, true, 4))).getMessage().contains("no complete"));
    }

    @Test
    void index_roundTripsThroughItsTextForm_andSkipsEmptyFiles() throws IOException {
        String text = "3\n/data/a.bin 2\n0 10\n10 25\nfile:///data/empty 0\nhttp://h/b 1\n5 9\n";
        DatasetIndex idx = DatasetIndex.read(new StringReader(text));
        assertEquals(3, idx.size());
        assertEquals(2, idx.fileOf(2));
        assertEquals(5, idx.begin(2));
        assertEquals(4, idx.length(2));
        assertEquals(15, idx.length(1));
        StringWriter w = new StringWriter();
        idx.write(w);
        assertEquals(text, w.toString());
    }

    @Test
    void index_errorsNameTheLine() {
        assertTrue(assertThrows(IOException.class, () -> DatasetIndex.read(new StringReader("1\na 2\n0 1\n")))
                .getMessage().contains("line 4"));
        assertTrue(assertThrows(IOException.class, () -> DatasetIndex.read(new StringReader("1\na 1\n5 1\n")))
                .getMessage().contains("line 3"));
        assertTrue(assertThrows(IOException.class, () -> DatasetIndex.read(new StringReader("x\n")))
                .getMessage().contains("line 1"));
    }

    @Test
    void progressOfTooManyEpochs_isRefusedWithTheValueAndTheLimit() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new DataPartition(25, new MountParams(Long.MAX_VALUE, 1, 1, 1, false, 4)));
        assertTrue(e.getMessage().contains("progress " + Long.MAX_VALUE) && e.getMessage().contains("limit of "
                + Integer.MAX_VALUE), e.getMessage());
    }
}
