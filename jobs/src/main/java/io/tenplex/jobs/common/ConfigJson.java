package io.tenplex.jobs.common;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

/**
 * A reconfiguration's {@code from} or {@code to} as JSON ({@code tp, pp, dp}, optional {@code ep},
 * and either {@code devicesPerWorker} with {@code firstWorker} or {@code devices} as [worker, local]
 * pairs), checked against {@link Limits} before anything is allocated.
 */
public final class ConfigJson {
    private ConfigJson() {
    }

    /** The configuration placed, with the model as given. */
    public static Ptc ptc(Model model, JsonNode c, String which) {
        return ptc(model, c, which, (m, stages) -> m);
    }

    /**
     * The old side of a reconfiguration: the stored model as that configuration saved it (a Megatron
     * save with P = 1 has no tied head, see {@link MegatronLayout#asSaved}).
     */
    public static Ptc source(Model stored, JsonNode c) {
        return ptc(stored, c, "from", MegatronLayout::asSaved);
    }

    /**
     * The new side: the stored model as that configuration loads it (a Megatron model gains or loses
     * its tied head with the pipeline, see {@link MegatronLayout#forStages}), so a change between
     * P = 1 and P > 1 plans the target Megatron expects, whichever configuration the model came from.
     */
    public static Ptc target(Model stored, JsonNode c) {
        return ptc(stored, c, "to", MegatronLayout::forStages);
    }

    /**
     * As {@link #source(Model, JsonNode)}, for a configuration already placed (a change's definition,
     * whose daemon plans only its own part: the whole plan's size is not its concern).
     */
    public static Ptc source(Model stored, Placed p) {
        return ptc(stored, p, MegatronLayout::asSaved);
    }

    /** As {@link #target(Model, JsonNode)}, for a configuration already placed. */
    public static Ptc target(Model stored, Placed p) {
        return ptc(stored, p, MegatronLayout::forStages);
    }

    private static Ptc ptc(Model stored, JsonNode c, String which, BiFunction<Model, Integer, Model> forStages) {
        Placed p = placed(c, which);
        Limits.planSize(p.devices().size(), p.config().pp(), forStages.apply(stored, p.config().pp()).tensors().size(),
                "\"" + which + "\": ");
        return ptc(stored, p, forStages);
    }

    private static Ptc ptc(Model stored, Placed p, BiFunction<Model, Integer, Model> forStages) {
        Model model = forStages.apply(stored, p.config().pp());
        return new Ptc(model, p.config(), RankLayout.MEGATRON, StageMap.uniform(model.layers(), p.config().pp()),
                p.devices());
    }

    /** A configuration's parallelism and the device of each rank, without a model. */
    public record Placed(ParallelConfig config, List<Device> devices) {}

    /** The configuration {@code c} ({@code which} names it in errors), checked against {@link Limits}. */
    public static Placed placed(JsonNode c, String which) {
        if (c == null || !c.isObject()) {
            throw new IllegalArgumentException("missing \"" + which + "\" configuration");
        }
        String where = "\"" + which + "\": ";
        ParallelConfig config = ParallelConfigJson.parse(c, where);
        int world = Limits.worldSize(config.tp(), config.pp(), config.dp(), config.ep(), where);
        List<Device> devices = c.has("devices") ? devices(c.get("devices"), world, where) : packed(c, world, where);
        return new Placed(config, devices);
    }

    private static List<Device> devices(JsonNode list, int world, String where) {
        if (!list.isArray() || list.size() != world) {
            throw new IllegalArgumentException(where + "\"devices\" must list " + world + " [worker, local] pairs (one "
                    + "per rank), got " + (list.isArray() ? list.size() + " entries" : Limits.abbreviate(list)));
        }
        List<Device> devices = new ArrayList<>(world);
        for (JsonNode d : list) {
            devices.add(device(d, where));
        }
        return devices;
    }

    /** One [worker, local] pair of integers in [0, {@link Limits#MAX_WORKER}). */
    public static Device device(JsonNode d, String where) {
        if (!d.isArray() || d.size() != 2 || !inRange(d.get(0)) || !inRange(d.get(1))) {
            throw new IllegalArgumentException(where + "device " + Limits.abbreviate(d) + " is not a [worker, local] "
                    + "pair of integers in [0, " + (Limits.MAX_WORKER - 1) + "]");
        }
        return new Device(d.get(0).intValue(), d.get(1).intValue());
    }

    private static boolean inRange(JsonNode v) {
        return v.isIntegralNumber() && v.canConvertToInt() && v.intValue() >= 0 && v.intValue() < Limits.MAX_WORKER;
    }

    private static List<Device> packed(JsonNode c, int world, String where) {
        if (!c.has("devicesPerWorker")) {
            throw new IllegalArgumentException(where + "needs devicesPerWorker or devices");
        }
        int g = Limits.intIn(c, "devicesPerWorker", 0, 1, Limits.MAX_RANKS, where);
        int first = Limits.intIn(c, "firstWorker", 0, 0, Limits.MAX_WORKER - 1 - world, where);
        List<Device> devices = new ArrayList<>(world);
        for (Device d : Ptc.packedDevices(world, g)) {
            devices.add(new Device(d.worker() + first, d.local()));
        }
        return devices;
    }

    /**
     * The {@code daemons} object of a request (worker number to {@code host:port}); empty when absent.
     *
     * @throws IllegalArgumentException a key that is not a number or an address that is not host:port
     */
    public static java.util.Map<Integer, java.net.InetSocketAddress> daemons(JsonNode daemons) {
        java.util.Map<Integer, java.net.InetSocketAddress> out = new java.util.HashMap<>();
        if (daemons == null) {
            return out;
        }
        for (var it = daemons.fields(); it.hasNext(); ) {
            var e = it.next();
            out.put(Integer.parseInt(e.getKey()), DaemonClient.address(e.getValue().asText()));
        }
        return out;
    }
}
