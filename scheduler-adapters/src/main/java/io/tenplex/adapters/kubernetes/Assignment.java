package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * The job's assignment, published pretty-printed at {@code /job/<job>/kubernetes/assignment.json}
 * for the relaunched ranks (and a restarted adapter): configuration, workers, and each pod's local
 * devices and ranks. {@code change}, {@code generation} and {@code config} are written as null while
 * unknown; {@code masterAddr} (rank 0's pod, torch.distributed's MASTER_ADDR) is left out with no pods.
 *
 * @param change the resource change that led to it, or null for the first observation
 * @param generation the generation the ranks load, or null
 * @param config the configuration, or null when none could be chosen
 */
record Assignment(String job, String change, JsonNode generation, Config config, int worldSize, int devicesPerWorker,
        List<Worker> workers, List<PodRanks> pods, @JsonInclude(JsonInclude.Include.NON_NULL) String masterAddr) {

    /** The parallel configuration and its devices as [worker, local] pairs. */
    record Config(int tp, int pp, int dp, List<List<Integer>> devices) {
    }

    /** A worker ever numbered: its node, its daemon's address and its devices now (0 when its node left). */
    record Worker(int worker, String node, String address, int devices) {
    }

    /** A pod: its node and worker, its local devices and its ranks. */
    record PodRanks(String pod, String node, int worker, List<Integer> local, List<Integer> ranks) {
    }
}
