package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.Jobs;
import io.tenplex.ptc.ParallelConfig;

/**
 * A size-only resource change ({@code size}, no {@code config}, the built-in chooser) of a job whose
 * ranks saved without a description (no model spec, no partition rules stored): it can only be a
 * data-parallel change, so it is one, (T,P,D) = (1,1,size), decided when the change is posted. When the
 * job's current generation is under T or P > 1 it cannot be planned without a description: refused
 * then, before the stop flag is raised, never after the ranks trained up to the change and saved.
 */
final class SizeOnly {
    private SizeOnly() {
    }

    /**
     * The data-parallel configuration of such a change, or null when the change is not one (a
     * configuration or a table is given, or the job is described).
     *
     * @param current the job's current complete generation (-1: none)
     * @throws IllegalArgumentException the job's current generation is not data-parallel
     */
    static ParallelConfig dataParallel(String job, ResourceChange.Spec spec, Jobs jobs, long current) {
        if (spec.config() != null || !(spec.parallelizer() instanceof BuiltinChooser) || jobs.described(job)) {
            return null;
        }
        if (current >= 0) {
            JsonNode c;
            try {
                c = jobs.generations().config(job, current);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            if (c != null && (c.path("tp").asInt(1) > 1 || c.path("pp").asInt(1) > 1)) {
                throw new IllegalArgumentException("job " + job + " has no model spec or partition rules stored and its "
                        + "generation " + current + " is under (T,P,D)=(" + c.path("tp").asInt(1) + "," + c.path("pp")
                        .asInt(1) + "," + c.path("dp").asInt(1) + "): a change of its size alone cannot be planned; give "
                        + "\"config\" and save with spec= or rules= (docs/PTC.md)");
            }
        }
        return ParallelConfig.of(1, 1, spec.devices().size());
    }
}
