package io.tenplex.adapters;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.adapters.downtime.DowntimeSplit;
import io.tenplex.jobs.reconfigure.ReconfigurationStatus;
import java.util.List;
import java.util.Map;

/**
 * What a resource change reports ({@code GET /api/v1/jobs/<job>/resources/<id>}): state, devices,
 * the generation and configuration it moves from, the configuration chosen, phases, events and the
 * reconfiguration's status, and the downtime split once ranks have reported it. {@code error},
 * {@code config}, {@code reconfiguration} and {@code downtime} are left out while absent; {@code atStep}, {@code generation} and {@code from} are written as null.
 *
 * @param devices [worker, local] pairs
 * @param config the chosen configuration with its devices, once chosen
 */
public record ResourceChangeStatus(String id, String job, String state,
        @JsonInclude(JsonInclude.Include.NON_NULL) String error, List<List<Integer>> devices, Long atStep,
        Long generation, JsonNode from, @JsonInclude(JsonInclude.Include.NON_NULL) JsonNode config,
        Map<String, Long> phaseMillis, List<String> events,
        @JsonInclude(JsonInclude.Include.NON_NULL) ReconfigurationStatus reconfiguration,
        @JsonInclude(JsonInclude.Include.NON_NULL) DowntimeSplit downtime) {
}
