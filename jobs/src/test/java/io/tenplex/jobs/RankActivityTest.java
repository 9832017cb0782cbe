package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** What the ranks of a job told the daemon: the most steps, the last read and save, bounded and forgotten. */
class RankActivityTest {
    private final AtomicLong now = new AtomicLong(1_000);
    private final RankActivity activity = new RankActivity(now::get);

    @Test
    void readsAndSaves_keepTheMostSteps_andTheirOwnTimes() {
        assertTrue(activity.of("j").isEmpty());
        activity.read("j", OptionalLong.empty());
        assertEquals(new RankActivity.Seen(-1, 1_000, 0), activity.of("j").orElseThrow());
        now.set(2_000);
        activity.read("j", OptionalLong.of(9));
        now.set(3_000);
        activity.saved("j", 5);
        assertEquals(new RankActivity.Seen(9, 2_000, 3_000), activity.of("j").orElseThrow(), "9 stays the most");
        now.set(4_000);
        activity.read("j", OptionalLong.of(4));
        assertEquals(new RankActivity.Seen(9, 4_000, 3_000), activity.of("j").orElseThrow());
        assertEquals(4_000, activity.of("j").orElseThrow().lastNanos());
        activity.forget("j");
        assertTrue(activity.of("j").isEmpty());
    }

    @Test
    void atMostMaxJobs_theOneHeardFromLeastRecentlyGoesFirst() {
        for (int i = 0; i < StopFlags.MAX_JOBS; i++) {
            now.incrementAndGet();
            activity.read("j" + i, OptionalLong.of(i));
        }
        activity.read("j0", OptionalLong.empty()); // heard from again: j1 is now the least recent
        now.incrementAndGet();
        activity.saved("new", 1);
        assertTrue(activity.of("new").isPresent() && activity.of("j0").isPresent());
        assertFalse(activity.of("j1").isPresent());
    }

    @Test
    void stopFlagReads_areRecorded_raisedOrNot_andForgottenWithTheJob() {
        StopFlags flags = new StopFlags();
        flags.ask("j", OptionalLong.of(3));
        flags.askStop("j", OptionalLong.of(7));
        assertEquals(7, flags.activity().of("j").orElseThrow().highestStep());
        flags.describe("k", OptionalLong.of(8)); // not a rank's read
        assertTrue(flags.activity().of("k").isEmpty());
        flags.forget("j");
        assertTrue(flags.activity().of("j").isEmpty());
    }
}
