package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.store.StoreException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * An abort that reaches a daemon before its part of the plan does (a definition still being planned
 * there, a post still on its way): the plan is remembered as aborted and the late start is refused,
 * so no part runs and waits in doubt after its change has ended.
 */
class AbortBeforeStartTest {
    @Test
    void abortBeforeThePartArrives_refusesItsLateStart() {
        Model model = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16), 1);
        ParallelConfig a = ParallelConfig.of(1, 1, 2);
        ChangeSpec spec = new ChangeSpec("j", "r9", 30, "00".repeat(32), new ConfigJson.Placed(a, Ptc.packedDevices(2, 2)),
                new ConfigJson.Placed(a, List.of(new io.tenplex.ptc.Device(1, 0), new io.tenplex.ptc.Device(1, 1))),
                Map.of(0, "127.0.0.1:1", 1, "127.0.0.1:2"), Map.of(), "save", 0, List.of(1), "127.0.0.1:1", 5000,
                List.of(), List.of());
        Ptc from = ConfigJson.source(model, spec.from());
        PlanPart part = LocalParts.build(spec, model, 1, PlanPartsTest.sources(from)).part();
        try (FakeCluster cluster = new FakeCluster(2)) {
            PartStatus aborted = cluster.jobs(1).abortPart("j", "r9").join();
            assertEquals("aborted", aborted.state());
            StoreException e = assertThrows(StoreException.class, () -> cluster.jobs(1).startPart(part));
            assertEquals(StoreException.Kind.CONFLICT, e.kind());
            assertTrue(e.getMessage().contains("was aborted before its part started here"), e.getMessage());
            assertThrows(StoreException.class, () -> cluster.jobs(1).part("j", "r9"), "no part runs");
            assertEquals("aborted", cluster.jobs(1).abortPart("j", "r9").join().state(), "aborting again answers the same");
        }
    }
}
