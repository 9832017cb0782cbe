package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** How a change's downtime split reads in tenplex run's output, slow paths included. */
class DowntimesTest {
    @Test
    void split_namesEachSlowPathWithItsReason() throws Exception {
        String d = "{\"complete\": true, \"seconds\": 2.5, \"waitForStopSeconds\": 1.25, \"phases\": {\"save\": 0.5, "
                + "\"commit\": 1.0, \"load\": 1.0}, \"daemon\": {\"move\": 0.75}, \"slowPaths\": [{\"rank\": 1, \"phase\": "
                + "\"load\", \"what\": \"3 of the loaded tensors over REST\", \"why\": \"no room\"}]}";
        assertEquals("downtime 2.500 s: save 0.500 s, commit wait 1.000 s (move 0.750 s), load 1.000 s; 1.250 s from the "
                + "change to the stop step; slower than it could be: rank 1's load: 3 of the loaded tensors over REST (no "
                + "room)", Downtimes.split(TenplexCli.JSON.readTree(d)));
        String none = d.replaceFirst(", \"slowPaths\".*\\]", "");
        assertEquals("downtime 2.500 s: save 0.500 s, commit wait 1.000 s (move 0.750 s), load 1.000 s; 1.250 s from the "
                + "change to the stop step", Downtimes.split(TenplexCli.JSON.readTree(none)));
        String moved = none.replace("}}", "}, \"slowMoves\": {\"0\": \"695.0 MB into 1 new shared-memory segment, "
                + "touched for the first time (kept 0 B)\"}}");
        assertEquals("downtime 2.500 s: save 0.500 s, commit wait 1.000 s (move 0.750 s), load 1.000 s; 1.250 s from the "
                + "change to the stop step; the move on worker 0: 695.0 MB into 1 new shared-memory segment, touched for "
                + "the first time (kept 0 B)", Downtimes.split(TenplexCli.JSON.readTree(moved)));
    }
}
