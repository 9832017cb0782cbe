package io.tenplex.adapters.rendezvous;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.Device;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How a round's nodes become ranks and devices: rank order (a daemon's nodes next to each other, since a
 * daemon is one worker), each node's devices on its daemon's worker, and the request of the resource
 * change that lays the job's state out for them.
 */
final class RoundLayout {
    private RoundLayout() {
    }

    /** A resource change's request: the nodes' devices, worker by worker (a worker is a daemon). */
    static ObjectNode body(List<RendezvousNode> next, boolean recover) {
        ObjectNode b = JsonNodeFactory.instance.objectNode();
        List<String> workers = new ArrayList<>();
        b.set("devices", ParallelConfigJson.devices(devices(ordered(next), workers)));
        ObjectNode daemons = b.putObject("daemons");
        for (int w = 0; w < workers.size(); w++) {
            daemons.put(Integer.toString(w), workers.get(w));
        }
        if (recover) {
            b.put("recover", true);
        }
        return b;
    }

    /** The devices of nodes in rank order; {@code workers} gets the daemon of each worker number. */
    static List<Device> devices(List<RendezvousNode> ordered, List<String> workers) {
        List<Device> out = new ArrayList<>();
        Map<String, Integer> worker = new LinkedHashMap<>();
        Map<String, Integer> local = new LinkedHashMap<>();
        for (RendezvousNode n : ordered) {
            int w = worker.computeIfAbsent(n.daemon, d -> {
                workers.add(d);
                return workers.size() - 1;
            });
            for (int i = 0; i < n.nproc; i++) {
                out.add(new Device(w, local.merge(n.daemon, 1, Integer::sum) - 1));
            }
        }
        return out;
    }

    /** Nodes in rank order: the round's order, with the nodes of one daemon next to each other. */
    static List<RendezvousNode> ordered(List<RendezvousNode> in) {
        Map<String, Integer> first = new java.util.HashMap<>();
        in.forEach(n -> first.putIfAbsent(n.daemon, first.size()));
        List<RendezvousNode> out = new ArrayList<>(in);
        out.sort(java.util.Comparator.comparingInt(n -> first.get(n.daemon)));
        return out;
    }

    static int world(List<RendezvousNode> ns) {
        return ns.stream().mapToInt(n -> n.nproc).sum();
    }

    static List<String> ids(List<RendezvousNode> ns) {
        return ns.stream().map(n -> n.id).toList();
    }
}
