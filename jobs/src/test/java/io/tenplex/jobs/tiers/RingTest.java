package io.tenplex.jobs.tiers;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import org.junit.jupiter.api.Test;

class RingTest {
    private final ObjectMapper json = new ObjectMapper();

    @Test
    void partners_areTheNextWorkers_wrapping() {
        Ring ring = new Ring(List.of(3, 0, 2, 1));
        assertEquals(List.of(1), ring.partners(0, 1));
        assertEquals(List.of(0), ring.partners(3, 1));
        assertEquals(List.of(0, 1), ring.partners(3, 2));
        assertEquals(List.of(1, 2, 3), ring.partners(0, 16)); // never itself, never twice
    }

    @Test
    void holdersFor_isTheInverseOfPartners() {
        Ring ring = new Ring(List.of(0, 1, 2, 3, 4));
        for (int n = 1; n <= 4; n++) {
            for (int w : ring.workers()) {
                for (int holder : ring.holdersFor(w, n)) {
                    assertEquals(true, ring.partners(holder, n).contains(w), "n=" + n + " w=" + w + " holder=" + holder);
                }
                assertEquals(n, ring.holdersFor(w, n).size());
            }
        }
        assertEquals(List.of(4, 3), ring.holdersFor(0, 2));
    }

    @Test
    void of_takesTheWorkersOfTheSavedConfiguration() throws Exception {
        var packed = json.readTree("{\"tp\":2,\"pp\":1,\"dp\":3,\"devicesPerWorker\":2,\"firstWorker\":1}");
        assertEquals(List.of(1, 2, 3), Ring.of(packed, 6, List.of(0, 1, 2, 3, 4)).workers());
        var listed = json.readTree("{\"tp\":1,\"pp\":1,\"dp\":3,\"devices\":[[5,0],[2,0],[5,1]]}");
        assertEquals(List.of(2, 5), Ring.of(listed, 3, List.of()).workers());
        assertEquals(List.of(0, 1), Ring.of(null, 4, List.of(1, 0)).workers()); // no devices said: the cluster's
    }

    @Test
    void aWorkerOutsideTheRing_hasNoPartners() {
        assertEquals(List.of(), new Ring(List.of(0, 1)).partners(7, 1));
        assertEquals(List.of(), new Ring(List.of(0)).partners(0, 1));
    }
}
