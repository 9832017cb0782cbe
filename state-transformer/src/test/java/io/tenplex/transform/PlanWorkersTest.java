package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which workers take part in a plan: every new rank's, also when the ranks get no tensor. */
class PlanWorkersTest {
    /**
     * A state of values alone (no tensor to place): every destination worker still receives its ranks'
     * values. Before, the plan named no worker and the coordinator failed on an empty list.
     */
    @Test
    void aStateWithoutTensors_namesEveryDestinationWorker() {
        Model values = new Model(List.of(), List.of(new ValueSpec("iteration", ValueSpec.Scope.GLOBAL)), 1);
        Ptc from = Ptc.packed(values, ParallelConfig.of(1, 1, 1), 1);
        Ptc to = Ptc.packed(values, ParallelConfig.of(1, 1, 4), 2);
        Plan plan = Planner.plan(from, to);
        assertEquals(0, plan.shards().size());
        assertEquals(List.of(0, 1), plan.destWorkers());
        assertEquals(List.of(0, 1), plan.withPaths((rank, path) -> path, s -> "", plan.values()).destWorkers());
    }
}
