package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.transform.Plan;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A plan made ahead is reused only for the very inputs it was made from. */
class PlanAheadUnitTest {
    private final Model model = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16));
    private final Ptc from = Ptc.packed(model, ParallelConfig.of(2, 1, 2), 2);
    private final Ptc to = Ptc.packed(model, ParallelConfig.of(4, 1, 1), 2);

    private PlanAhead made() {
        PlanAhead ahead = new PlanAhead();
        PlanAhead.plan(ahead, from, to);
        assertTrue(ahead.planned());
        return ahead;
    }

    @Test
    void sameInputs_reuseThePlan() {
        PlanAhead ahead = made();
        Plan first = PlanAhead.plan(ahead, from, to);
        assertSame(first, PlanAhead.plan(ahead, Ptc.packed(model, ParallelConfig.of(2, 1, 2), 2),
                Ptc.packed(MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16)), ParallelConfig.of(4, 1, 1),
                        2)));
        assertTrue(ahead.outcome().startsWith("plan made ahead used"), ahead.outcome());
    }

    @Test
    void otherDevices_rePlan_andSayWhy() {
        PlanAhead ahead = made();
        Plan before = PlanAhead.plan(ahead, from, to);
        List<Device> moved = new ArrayList<>(from.devices());
        moved.set(3, new Device(5, 0)); // a rank re-placed (recovery around a lost worker)
        Ptc placed = new Ptc(model, from.config(), RankLayout.MEGATRON, StageMap.uniform(4, 1), moved);
        Plan again = PlanAhead.plan(ahead, placed, to);
        assertNotSame(before, again);
        assertEquals(5, again.sourceDevice(3).worker());
        assertTrue(ahead.outcome().contains("the old configuration's devices are"), ahead.outcome());
    }

    @Test
    void otherConfiguration_rePlans() {
        PlanAhead ahead = made();
        Ptc other = Ptc.packed(model, ParallelConfig.of(1, 1, 4), 2);
        Plan again = PlanAhead.plan(ahead, other, to);
        assertEquals(other.config(), again.from());
        assertTrue(ahead.outcome().contains("the old configuration is"), ahead.outcome());
    }
}
