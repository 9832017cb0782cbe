package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.Limits;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * A resource change's request body read into its {@link ResourceChange.Spec}: the devices (listed, or
 * packed to workers), the configuration or the parallelizer, the stop step, the save timeout, the
 * daemons, recovery and the configuration the ranks run under, each checked before anything happens.
 */
final class ChangeSpecJson {
    /** The longest a change waits for the ranks to save. */
    static final long MAX_SAVE_TIMEOUT_SECONDS = 7 * 24 * 3600;

    private ChangeSpecJson() {
    }

    /** Parses a request body, see {@link ResourceChange.Spec#parse}. */
    static ResourceChange.Spec parse(JsonNode b, Parallelizer stored) {
        List<Device> devices = new ArrayList<>();
        int perWorker = b.has("devices") ? listed(b, devices) : packed(b, devices);
        ParallelConfig config = null;
        if (b.has("config")) {
            config = ParallelConfigJson.parse(b.get("config"), "config ");
            if (config.worldSize() != devices.size()) {
                throw new IllegalArgumentException("config " + config + " needs " + config.worldSize()
                        + " devices, the change gives " + devices.size());
            }
        }
        Parallelizer p = stored != null ? stored : new BuiltinChooser();
        long memory = 0;
        JsonNode pz = b.path("parallelizer");
        if (pz.has("table")) {
            p = ParaConfigTable.of(pz.get("table"));
        } else if (pz.isObject()) {
            p = new BuiltinChooser();
            memory = pz.path("memoryPerDevice").asLong(0);
        }
        OptionalLong atStep = b.has("atStep") ? OptionalLong.of(nonNegative(b, "atStep")) : OptionalLong.empty();
        long timeout = b.has("saveTimeoutSeconds") ? nonNegative(b, "saveTimeoutSeconds") : 600;
        if (timeout > MAX_SAVE_TIMEOUT_SECONDS) {
            throw new IllegalArgumentException("\"saveTimeoutSeconds\" " + timeout + " is over the limit of "
                    + MAX_SAVE_TIMEOUT_SECONDS + " (7 days)");
        }
        if (b.has("recover") && !b.get("recover").isBoolean()) {
            throw new IllegalArgumentException("\"recover\" must be true or false, got " + b.get("recover"));
        }
        return new ResourceChange.Spec(List.copyOf(devices), perWorker, config, p, memory, atStep, timeout * 1000,
                Map.copyOf(ConfigJson.daemons(b.get("daemons"))), b.path("recover").asBoolean(false), running(b));
    }

    /**
     * The optional {@code from}: the configuration the ranks run under (with its {@code devices}, or
     * packed by its {@code devicesPerWorker}), checked as a reconfiguration's {@code from}; null when
     * not given (or given as null). A change of a job without a saved generation plans ahead from it.
     */
    private static JsonNode running(JsonNode b) {
        if (!b.hasNonNull("from")) {
            return null;
        }
        ConfigJson.placed(b.get("from"), "from");
        return b.get("from").deepCopy();
    }

    /** {@code devices}, each listed once; answers the devices per worker (given, or the most listed). */
    private static int listed(JsonNode b, List<Device> devices) {
        JsonNode list = b.get("devices");
        if (!list.isArray() || list.isEmpty() || list.size() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("\"devices\" must be a non-empty list of at most " + Limits.MAX_RANKS
                    + " [worker, local] pairs" + (list.isArray() ? ", got " + list.size() : ""));
        }
        Map<Integer, Integer> count = new LinkedHashMap<>();
        java.util.Set<Device> seen = new java.util.HashSet<>();
        for (JsonNode d : list) {
            Device dev = ConfigJson.device(d, "");
            if (!seen.add(dev)) {
                throw new IllegalArgumentException("device " + d + " is listed twice");
            }
            devices.add(dev);
            count.merge(dev.worker(), 1, Integer::sum);
        }
        return Limits.intIn(b, "devicesPerWorker", count.values().stream().mapToInt(i -> i).max().orElse(1), 1,
                Limits.MAX_RANKS, "");
    }

    /** {@code size} devices packed {@code devicesPerWorker} to a worker from {@code firstWorker}. */
    private static int packed(JsonNode b, List<Device> devices) {
        if (!b.has("size") || !b.has("devicesPerWorker")) {
            throw new IllegalArgumentException("give \"devices\" ([worker, local] pairs) or \"size\" and "
                    + "\"devicesPerWorker\" (both >= 1)");
        }
        int size = Limits.intIn(b, "size", -1, 1, Limits.MAX_RANKS, "");
        int perWorker = Limits.intIn(b, "devicesPerWorker", -1, 1, Limits.MAX_RANKS, "");
        int first = Limits.intIn(b, "firstWorker", 0, 0, Limits.MAX_WORKER - 1 - size, "");
        for (Device d : Ptc.packedDevices(size, perWorker)) {
            devices.add(new Device(d.worker() + first, d.local()));
        }
        return perWorker;
    }

    private static long nonNegative(JsonNode b, String f) {
        JsonNode v = b.get(f);
        if (!v.canConvertToLong() || v.asLong() < 0) {
            throw new IllegalArgumentException("\"" + f + "\" must be a non-negative integer, got " + v);
        }
        return v.asLong();
    }
}
