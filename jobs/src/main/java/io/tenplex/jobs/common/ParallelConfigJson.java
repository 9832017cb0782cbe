package io.tenplex.jobs.common;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import java.util.List;

/**
 * The one JSON form of a {@link ParallelConfig}: {@code {"tp": T, "pp": P, "dp": D}} with an optional
 * {@code "ep"} (written only when over 1), each an integer in [1, {@link Limits#MAX_RANKS}] that
 * defaults to 1, the world size bounded too; and a placement, the same with {@code "devices"} as
 * [worker, local] pairs.
 */
public final class ParallelConfigJson {
    private ParallelConfigJson() {
    }

    /**
     * Reads a configuration, checked against {@link Limits} before anything is allocated.
     *
     * @param where what prefixes an error message (e.g. {@code "config "})
     */
    public static ParallelConfig parse(JsonNode c, String where) {
        int max = Limits.MAX_RANKS;
        int tp = Limits.intIn(c, "tp", 1, 1, max, where);
        int pp = Limits.intIn(c, "pp", 1, 1, max, where);
        int dp = Limits.intIn(c, "dp", 1, 1, max, where);
        int ep = Limits.intIn(c, "ep", 1, 1, max, where);
        Limits.worldSize(tp, pp, dp, ep, where);
        return new ParallelConfig(tp, pp, dp, ep, false);
    }

    /** {@code {"tp", "pp", "dp"}} and {@code "ep"} when over 1. */
    public static ObjectNode write(ParallelConfig c) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("tp", c.tp());
        o.put("pp", c.pp());
        o.put("dp", c.dp());
        if (c.ep() > 1) {
            o.put("ep", c.ep());
        }
        return o;
    }

    /** The configuration with its devices, as a reconfiguration's {@code to} takes it. */
    public static ObjectNode placement(ParallelConfig c, List<Device> devices) {
        ObjectNode o = write(c);
        o.set("devices", devices(devices));
        return o;
    }

    /** Devices as [worker, local] pairs. */
    public static ArrayNode devices(List<Device> devices) {
        ArrayNode a = JsonNodeFactory.instance.arrayNode();
        devices.forEach(d -> a.addArray().add(d.worker()).add(d.local()));
        return a;
    }
}
