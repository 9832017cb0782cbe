package io.tenplex.jobs.generations;

import java.util.List;

/** A seal's outcome: the rank's manifest summary, whether the generation is complete, the daemons not told. */
public record Sealed(long step, int rank, int world, int tensors, long bytes, boolean complete, List<String> notTold) {
}
