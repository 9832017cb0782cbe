package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.jobs.reconfigure.PlanAhead;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Planning a resource change while the job trains towards its stop step: a plan needs the model and
 * the old and new configurations, not the saved bytes, so the change chooses its configuration and
 * plans as soon as the stop flag is up, from the configuration the ranks run under: the last change's
 * that committed here when it moved the job's current generation (the ranks were relaunched under
 * it and have not saved since), else the current generation's. The reconfiguration then checks the plan's inputs against the generation
 * the ranks saved and plans again when they differ ({@link PlanAhead}).
 */
final class AheadOfSave {
    /** The configuration chosen and the plan made for it. */
    record Planned(ParallelConfig config, PlanAhead plan) {
    }

    private AheadOfSave() {
    }

    /**
     * The configuration and plan of a change of {@code job} from {@code from}, the configuration the
     * change says the ranks run under (their launcher knows it), else from generation {@code before}'s
     * configuration or the last committed change's; null, said in an event, when it cannot be planned
     * yet (no {@code from} and no generation, no model): the change then chooses and plans after the
     * save, as it would have. A wrong {@code from} costs only the plan: the reconfiguration plans again
     * when the saved generation's configuration differs.
     */
    static Planned plan(Jobs jobs, String job, long before, ResourceChangeStatus running, ResourceChange.Spec spec,
            Supplier<ParallelConfig> choose, Map<Integer, InetSocketAddress> daemons, Consumer<String> event) {
        JsonNode from = spec.from();
        List<Device> devices = spec.devices();
        if (before < 0 && from == null) {
            event.accept("not planned ahead: job " + job + " has no complete generation to take the configuration of"
                    + " the save from, and the change gave none (\"from\"); planning after the save");
            return null;
        }
        try {
            ParallelConfig c = choose.get();
            long t = System.nanoTime();
            JsonNode to = ParallelConfigJson.placement(c, devices);
            boolean moved = from == null && running != null && running.config() != null && running.generation() != null
                    && running.generation() == before; // the ranks run under that change's output, not under `before`'s
            ReconfigureRequest r = from != null ? new ReconfigureRequest(job, null, from, to, OptionalLong.empty(), false,
                    OptionalLong.empty(), daemons, -1, OptionalLong.empty(), OptionalLong.empty(), null)
                    : moved ? new ReconfigureRequest(job, null, running.config(), to, OptionalLong.of(before), false,
                    OptionalLong.empty(), daemons, -1, OptionalLong.empty(), OptionalLong.empty(), null)
                    : ReconfigureRequest.ofGeneration(job, before, to, daemons);
            PlanAhead ahead = jobs.planAhead(r, spec.atStep().isPresent()); // saves touched ahead: not at once
            String assumed = from != null ? "the configuration the change gave (\"from\": the ranks run under it)"
                    : moved ? "the configuration of change " + running.id() + " (the ranks run under it)"
                    : "configuration of generation " + before;
            event.accept(ahead.describe() + ", assuming the model and " + assumed + " ("
                    + (System.nanoTime() - t) / 1_000_000 + " ms in all)");
            return new Planned(c, ahead);
        } catch (Exception e) {
            event.accept("not planned ahead (" + e.getMessage() + "); planning after the save");
            return null;
        }
    }

    /** Starts the reconfiguration of {@code generation} to {@code c}, with the plan made ahead when it still fits. */
    static Reconfiguration start(Jobs jobs, String job, long generation, ParallelConfig c, List<Device> devices,
            Map<Integer, InetSocketAddress> daemons, Planned ahead, Consumer<String> event) throws java.io.IOException {
        Reconfiguration r = jobs.reconfigure(ReconfigureRequest.ofGeneration(job, generation,
                ParallelConfigJson.placement(c, devices), daemons), ahead != null ? ahead.plan() : null);
        if (ahead != null) {
            event.accept(ahead.plan().outcome());
        }
        return r;
    }
}
