package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.StoreException;
import io.tenplex.store.memory.Allocator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The primitive sample tables against the map and list they replace, and the heap reservations. */
class SampleTableTest {
    private final Allocator allocator = new Allocator(1 << 20);

    /** Local ranks 2, 0 and 3 of 4 with a global batch of 7 (local batches 2, 2, 1) and files of 3. */
    @Test
    void loadOrderAndLookup_matchTheReference_forUnevenBatchesAndShortFiles() {
        DataPartition p = new DataPartition(50, new MountParams(14, 7, 4, 9, true, 3));
        List<Integer> ranks = List.of(2, 0, 3);
        ShardBuffer[][] byRank = new ShardBuffer[ranks.size()][];
        for (int k = 0; k < ranks.size(); k++) {
            int[] all = p.rankSamples(ranks.get(k));
            byRank[k] = new ShardBuffer[p.shardFiles(ranks.get(k))];
            for (int f = 0; f < byRank[k].length; f++) {
                int[] ids = p.shardSamples(all, f);
                byRank[k][f] = new ShardBuffer(ids, new long[ids.length], allocator);
            }
        }
        SampleTable t = SampleTable.of(byRank, ranks.stream().mapToInt(p::localBatch).toArray(), 3);
        List<SampleLoc> reference = new ArrayList<>(); // the former DatasetMount.loadOrder()
        for (int b = 0; b < p.batches(); b++) {
            for (int k = 0; k < ranks.size(); k++) {
                int local = p.localBatch(ranks.get(k));
                for (int j = 0; j < local; j++) {
                    int s = b * local + j;
                    reference.add(new SampleLoc(byRank[k][s / 3], s % 3));
                }
            }
        }
        assertEquals(reference.size(), t.size());
        int first = ranks.stream().mapToInt(p::localBatch).sum();
        for (int i = 0; i < reference.size(); i++) {
            SampleLoc want = reference.get(i);
            assertEquals(want, t.loadAt(i), "load position " + i);
            int id = want.buf().ids[want.i()];
            assertEquals(i < first, t.inFirstBatch(id), "load position " + i + " in the first batch");
            assertSame(want.buf(), t.find(id).buf());
            assertEquals(want.i(), t.find(id).i());
        }
        int[] rank1 = p.rankSamples(1); // not local
        assertNull(t.find(rank1[0]));
        assertEquals(false, t.inFirstBatch(rank1[0]));
        assertNull(t.find(-1));
    }

    @Test
    void reservations_growShrinkAndReturnToZero_andRefuseWithWhatToDo() {
        MountHeap heap = new MountHeap(1000);
        MountHeap.Reservation a = heap.reserve(600, "mount a");
        StoreException notNow = assertThrows(StoreException.class, () -> heap.reserve(500, "mount b"));
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE, notNow.kind());
        StoreException never = assertThrows(StoreException.class, () -> heap.reserve(1001, "mount c"));
        assertEquals(StoreException.Kind.TOO_LARGE, never.kind());
        assertEquals(true, never.getMessage().contains("TENPLEXD_JAVA_OPTS"), never.getMessage());
        assertEquals(600, heap.used());
        a.resize(200);
        MountHeap.Reservation b = heap.reserve(500, "mount b");
        assertThrows(StoreException.class, () -> b.resize(900));
        assertEquals(700, heap.used(), "a refused growth changes nothing");
        a.close();
        a.close();
        b.close();
        assertEquals(0, heap.used());
    }
}
