package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The distributed rehearsal buffer with four tenplexd processes (one per worker, started with
 * {@code --peers}) and Python trainer processes (tests/python/rehearsal_cluster.py, which says what
 * is checked): global sampling is unbiased by a chi-square test that two deliberately biased samplers
 * fail, and the buffer survives a resource change from four data-parallel ranks to two.
 */
class RehearsalIT {
    @Test
    void rehearsalBuffer_fourDaemons_unbiasedGlobalSampling_survivesAResize() throws Exception {
        try (PeerDaemons c = PeerDaemons.start(4, "--memory-limit", "128m")) {
            PeerDaemons.Driver d = c.run("rehearsal_cluster.py");
            assertEquals(0, d.exit(), d.out());
            assertTrue(d.out().strip().endsWith("OK"), d.out());
        }
    }
}
