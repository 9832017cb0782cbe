package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Parts planned ahead: one planning per set of inputs (a second asker, or the change itself, waits for
 * it), a failed planning is not kept, and only the most recent are.
 */
class OwnPartsAheadTest {
    private static OwnPartsAhead.Key key(int worker) {
        ParallelConfig c = ParallelConfig.of(1, 1, 2);
        ConfigJson.Placed p = new ConfigJson.Placed(c, Ptc.packedDevices(2, 1));
        return new OwnPartsAhead.Key("00".repeat(32), p, p, Map.of(), worker);
    }

    private static OwnPartsAhead.Planned planned() {
        return new OwnPartsAhead.Planned(null, null, null);
    }

    @Test
    void onePlanningPerInputs_theChangeWaitsForIt() throws Exception {
        OwnPartsAhead ahead = new OwnPartsAhead();
        CountDownLatch inPlanning = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger plannings = new AtomicInteger();
        OwnPartsAhead.Planned p = planned();
        CompletableFuture<OwnPartsAhead.Planned> first = CompletableFuture.supplyAsync(() -> ahead.plan(key(0), () -> {
            plannings.incrementAndGet();
            inPlanning.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            return p;
        }));
        inPlanning.await();
        CompletableFuture<OwnPartsAhead.Planned> second = CompletableFuture.supplyAsync(() -> ahead.plan(key(0), () -> {
            plannings.incrementAndGet();
            return planned();
        }));
        CompletableFuture<OwnPartsAhead.Planned> change = CompletableFuture.supplyAsync(() -> ahead.use(key(0)));
        release.countDown();
        assertSame(p, first.get(10, TimeUnit.SECONDS));
        assertSame(p, second.get(10, TimeUnit.SECONDS));
        assertSame(p, change.get(10, TimeUnit.SECONDS));
        assertEquals(1, plannings.get());
        assertEquals(1, ahead.used());
        assertNull(ahead.use(key(1)), "other inputs: nothing planned ahead");
    }

    @Test
    void aFailedPlanning_isNotKept_andOnlyTheMostRecentAre() {
        OwnPartsAhead ahead = new OwnPartsAhead();
        assertThrows(IllegalArgumentException.class, () -> ahead.plan(key(0), () -> {
            throw new IllegalArgumentException("too large");
        }));
        assertNull(ahead.use(key(0)));
        assertEquals(0, ahead.size());
        for (int w = 0; w < OwnPartsAhead.KEPT + 1; w++) {
            ahead.plan(key(w), OwnPartsAheadTest::planned);
        }
        assertEquals(OwnPartsAhead.KEPT, ahead.size());
        assertNull(ahead.use(key(0)), "the eldest dropped");
        assertEquals(List.of(true, true), List.of(ahead.use(key(1)) != null, ahead.use(key(2)) != null));
    }
}
