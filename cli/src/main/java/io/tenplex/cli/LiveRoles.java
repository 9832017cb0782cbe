package io.tenplex.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import java.util.List;

/**
 * What {@code tenplex run --live} tells its ranks through the rendezvous store at reconfiguration
 * {@code n} (the keys and values of docs/LIVE.md, read by clients/python/tenplex/live.py): the new role
 * (world size, configuration, the prefix of the new group), or that every rank exits to be relaunched,
 * or that the job stopped; and whether the kept ranks can continue in place at all.
 */
final class LiveRoles {
    private LiveRoles() {
    }

    /** The key of reconfiguration {@code n}'s answer. */
    static String key(int n) {
        return "tenplex/live/" + n;
    }

    /** The counter of the ranks that saved for reconfiguration {@code n} and wait for its answer. */
    static String waiting(int n) {
        return key(n) + "/waiting";
    }

    /** The counter of the ranks that formed the process group under {@code prefix}. */
    static String regrouped(String prefix) {
        return prefix + "/regrouped";
    }

    /** The new role: the ranks below {@code c.worldSize()} continue in the group under {@code prefix}, the others leave. */
    static String role(ParallelConfig c, List<Device> devices, String prefix, int segment) {
        ObjectNode r = TenplexCli.JSON.createObjectNode();
        r.put("world", c.worldSize());
        r.set("config", ParallelConfigJson.placement(c, devices));
        r.put("prefix", prefix);
        r.put("segment", segment);
        return r.toString();
    }

    /** Every rank exits (status 0: it has saved) to be relaunched, for {@code why}. */
    static String relaunch(String why) {
        ObjectNode r = TenplexCli.JSON.createObjectNode();
        r.put("relaunch", why);
        return r.toString();
    }

    /** Every rank leaves: the job stopped. */
    static String leave(String why) {
        ObjectNode r = TenplexCli.JSON.createObjectNode();
        r.put("world", 0);
        r.put("leave", why);
        return r.toString();
    }

    /**
     * Why the ranks kept from {@code before} cannot continue in place under {@code after} (a rank whose
     * worker changes: its process cannot move), or null when they can.
     */
    static String cannotContinue(List<Device> before, List<Device> after) {
        for (int r = 0; r < Math.min(before.size(), after.size()); r++) {
            if (before.get(r).worker() != after.get(r).worker()) {
                return "rank " + r + " moves from worker " + before.get(r).worker() + " to worker " + after.get(r).worker();
            }
        }
        return null;
    }
}
