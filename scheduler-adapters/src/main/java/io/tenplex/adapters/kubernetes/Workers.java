package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.adapters.kubernetes.PodMembership.Member;
import io.tenplex.adapters.kubernetes.PodMembership.Membership;
import io.tenplex.adapters.kubernetes.PodMembership.Node;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.ParallelConfig;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The job's tenplex workers: a worker number for every node that ever held member pods (given in
 * the order nodes appear, never reused) and its daemon's address, and the assignment JSON they give
 * (configuration, workers, each pod's local devices and ranks). Thread-safe.
 */
final class Workers {
    private final int daemonPort;
    private final Map<String, Integer> ids = new TreeMap<>();
    private final Map<Integer, String> addresses = new TreeMap<>();

    Workers(int daemonPort) {
        this.daemonPort = daemonPort;
    }

    /** Takes the worker numbers of a published assignment; returns its devices per node. */
    synchronized Map<String, Integer> restore(JsonNode assignment) {
        Map<String, Integer> shape = new TreeMap<>();
        for (JsonNode w : assignment.path("workers")) {
            ids.put(w.path("node").asText(), w.path("worker").asInt());
            addresses.put(w.path("worker").asInt(), w.path("address").asText());
            if (w.path("devices").asInt() > 0) {
                shape.put(w.path("node").asText(), w.path("devices").asInt());
            }
        }
        return shape;
    }

    /** Gives new nodes the next worker numbers (in name order); numbers are never reused. */
    synchronized void number(Membership m) {
        for (Node n : m.nodes()) {
            if (!ids.containsKey(n.name())) {
                int id = ids.values().stream().mapToInt(i -> i + 1).max().orElse(0);
                ids.put(n.name(), id);
            }
            addresses.put(ids.get(n.name()), n.hostIp() + ":" + daemonPort);
        }
    }

    /** Puts {@code devices} ([worker, local] pairs) and {@code devicesPerWorker} into {@code body}. */
    synchronized void devices(Membership m, ObjectNode body) {
        ArrayNode devs = body.putArray("devices");
        int perWorker = 1;
        for (Node n : sortedByWorker(m)) {
            for (int l = 0; l < n.devices(); l++) {
                devs.addArray().add(ids.get(n.name())).add(l);
            }
            perWorker = Math.max(perWorker, n.devices());
        }
        body.put("devicesPerWorker", perWorker);
    }

    /** Every worker's daemon address by worker number (as a resource change names them). */
    synchronized void daemons(ObjectNode daemons) {
        addresses.forEach((w, a) -> daemons.put(Integer.toString(w), a));
    }

    synchronized String numbers() {
        return ids.toString();
    }

    private List<Node> sortedByWorker(Membership m) {
        List<Node> nodes = new ArrayList<>(m.nodes());
        nodes.sort(Comparator.comparing(n -> ids.get(n.name())));
        return nodes;
    }

    /** The assignment of {@code m} under {@code config} (null: none chosen), after change {@code change}. */
    synchronized Assignment assignment(String job, Membership m, JsonNode config, String change, JsonNode generation) {
        List<List<Integer>> devices = new ArrayList<>();
        int perWorker = 1;
        for (Node n : sortedByWorker(m)) {
            for (int l = 0; l < n.devices(); l++) {
                devices.add(List.of(ids.get(n.name()), l));
            }
            perWorker = Math.max(perWorker, n.devices());
        }
        ParallelConfig pc = config == null ? null : ParallelConfigJson.parse(config, "config");
        Assignment.Config c = pc == null ? null : new Assignment.Config(pc.tp(), pc.pp(), pc.dp(), devices);
        List<Assignment.PodRanks> pods = pods(m);
        return new Assignment(job, change, generation == null || generation.isNull() || generation.isMissingNode()
                ? null : generation, c, m.devices(), perWorker, workers(m), pods, masterAddr(m));
    }

    /** Rank 0's pod IP (or its node's host IP): where torch.distributed's rendezvous runs; null with no pods. */
    private String masterAddr(Membership m) {
        String addr = null;
        int rank = 0;
        for (Node n : sortedByWorker(m)) {
            for (Member p : n.pods()) {
                if (rank == 0) {
                    addr = p.podIp() != null ? p.podIp() : n.hostIp();
                }
                rank += p.devices();
            }
        }
        return addr;
    }

    /** Each pod's node, worker, local devices and ranks. */
    private List<Assignment.PodRanks> pods(Membership m) {
        List<Assignment.PodRanks> pods = new ArrayList<>();
        int rank = 0;
        for (Node n : sortedByWorker(m)) {
            int local = 0;
            for (Member p : n.pods()) {
                List<Integer> locals = new ArrayList<>();
                List<Integer> ranks = new ArrayList<>();
                for (int i = 0; i < p.devices(); i++) {
                    locals.add(local++);
                    ranks.add(rank++);
                }
                pods.add(new Assignment.PodRanks(p.pod(), n.name(), ids.get(n.name()), locals, ranks));
            }
        }
        return pods;
    }

    /** Every worker ever numbered, with its address and its devices now (0 when its node left). */
    private List<Assignment.Worker> workers(Membership m) {
        Map<String, Node> present = new TreeMap<>();
        m.nodes().forEach(n -> present.put(n.name(), n));
        List<Assignment.Worker> workers = new ArrayList<>();
        for (Map.Entry<String, Integer> e : ids.entrySet()) {
            Node n = present.get(e.getKey());
            workers.add(new Assignment.Worker(e.getValue(), e.getKey(), addresses.get(e.getValue()),
                    n == null ? 0 : n.devices()));
        }
        return workers;
    }
}
