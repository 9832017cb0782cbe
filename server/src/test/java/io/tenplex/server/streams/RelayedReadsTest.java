package io.tenplex.server.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class RelayedReadsTest {
    private final RelayedReads reads = new RelayedReads();

    @Test
    void withdraw_completesTheWaitingRead() {
        CompletableFuture<Void> gone = reads.arrive("r1");
        assertFalse(gone.isDone());
        reads.withdraw("r1");
        assertTrue(gone.isDone());
        assertEquals(0, reads.waiting());
    }

    @Test
    void withdrawBeforeTheReadComes_makesItTakeNothing() {
        reads.withdraw("r1");
        assertTrue(reads.arrive("r1").isDone());
        assertFalse(reads.arrive("r2").isDone());
    }

    @Test
    void withdrawAfterTheReadWasAnswered_changesNothing() {
        CompletableFuture<Void> gone = reads.arrive("r1");
        reads.answered("r1");
        reads.withdraw("r1");
        assertFalse(gone.isDone(), "its batch is on its way back to the relaying daemon");
        assertEquals(0, reads.waiting());
    }

    @Test
    void earlyWithdrawals_areBounded() {
        for (int i = 0; i <= RelayedReads.EARLY; i++) {
            reads.withdraw("r" + i);
        }
        assertFalse(reads.arrive("r0").isDone(), "the oldest early withdrawal is forgotten");
        assertTrue(reads.arrive("r" + RelayedReads.EARLY).isDone());
    }

    @Test
    void readIds_areChecked() {
        assertThrows(IllegalArgumentException.class, () -> reads.arrive(""));
        assertThrows(IllegalArgumentException.class, () -> reads.withdraw("x".repeat(RelayedReads.MAX_ID_CHARS + 1)));
    }
}
