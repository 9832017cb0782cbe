package io.tenplex.jobs.generations;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * What a daemon knows of a job's generations ({@code GET /api/v1/jobs/<job>/generations}).
 *
 * @param current the step of the current complete generation, or null (always written)
 */
public record GenerationsStatus(Long current, List<Generation> generations) {

    /**
     * One step: {@code world}, {@code sealedRanks} and {@code config} only when this daemon was told
     * of its seals (not for a step it only finds in its store); {@code config} only when one was given;
     * {@code levels}: the checkpoint levels it reached on this daemon ({@link Tiers}), cheapest first;
     * {@code levelDetails}: per level, what reaching it cost when noted (a durable flush's
     * {@code bytesWritten} against {@code logicalBytes}), absent when none; {@code lost}: why this daemon
     * no longer has a step it had (a damaged durable copy, a generation the job went back from), absent
     * for the others.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Generation(long step, boolean complete, Integer world, List<Integer> sealedRanks, JsonNode config,
            List<Integer> localRanks, List<String> levels,
            @JsonInclude(JsonInclude.Include.NON_EMPTY) java.util.Map<String, java.util.Map<String, Long>> levelDetails,
            String lost) {
        /** A step this daemon had and lost ({@link LostGenerations}), with the reason. */
        static Generation lost(long step, String reason) {
            return new Generation(step, false, null, null, null, List.of(), List.of(), null, reason);
        }
    }
}
