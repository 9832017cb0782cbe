package io.tenplex.adapters.kubernetes;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Quantity;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Which devices a job has, read off its pods. A pod counts when it is {@code Running}, its
 * {@code Ready} condition is {@code True}, it is not being deleted, and it is bound to a node with a
 * host IP. Its devices are the {@code tenplex.io/devices} annotation when set, else the sum of its
 * containers' limits (or requests) of the GPU resource, else one (a CPU-only pod is one device).
 * Pods on the same node share that node's daemon: they are one worker whose devices add up.
 */
public final class PodMembership {
    /** Annotation that overrides a pod's device count. */
    public static final String DEVICES_ANNOTATION = "tenplex.io/devices";
    /** The GPU resource counted by default. */
    public static final String DEFAULT_GPU_RESOURCE = "nvidia.com/gpu";

    /** A member pod, its devices and its IP (null when it has none yet). */
    public record Member(String pod, int devices, String podIp) {
    }

    /** One node (a tenplex worker): its host IP, devices and member pods (by name). */
    public record Node(String name, String hostIp, int devices, List<Member> pods) {
        public Node {
            pods = List.copyOf(pods);
        }
    }

    /**
     * The job's nodes sorted by name, and the pods that were not counted with the reason (for
     * reports; a pod that is starting is not an error).
     */
    public record Membership(List<Node> nodes, Map<String, String> skipped) {
        public Membership {
            nodes = List.copyOf(nodes);
            skipped = Map.copyOf(skipped);
        }

        public int devices() {
            return nodes.stream().mapToInt(Node::devices).sum();
        }

        /** Node name to devices: what a resource change depends on. */
        public Map<String, Integer> shape() {
            Map<String, Integer> m = new TreeMap<>();
            nodes.forEach(n -> m.put(n.name(), n.devices()));
            return m;
        }

        @Override
        public String toString() {
            return nodes.isEmpty() ? "no ready pods" : devices() + " devices on " + shape();
        }
    }

    private PodMembership() {
    }

    /** The membership of {@code pods}, counting {@code gpuResource} per container. */
    public static Membership of(List<Pod> pods, String gpuResource) {
        Map<String, List<Member>> byNode = new TreeMap<>();
        Map<String, String> hostIps = new TreeMap<>();
        Map<String, String> skipped = new TreeMap<>();
        List<Pod> sorted = new ArrayList<>(pods);
        sorted.sort(Comparator.comparing(p -> p.getMetadata().getName()));
        for (Pod p : sorted) {
            String name = p.getMetadata().getName();
            String why = notCounted(p);
            if (why != null) {
                skipped.put(name, why);
                continue;
            }
            int devices;
            try {
                devices = devices(p, gpuResource);
            } catch (IllegalArgumentException e) {
                skipped.put(name, e.getMessage());
                continue;
            }
            String node = p.getSpec().getNodeName();
            byNode.computeIfAbsent(node, k -> new ArrayList<>()).add(new Member(name, devices, p.getStatus().getPodIP()));
            hostIps.putIfAbsent(node, p.getStatus().getHostIP());
        }
        List<Node> nodes = new ArrayList<>();
        byNode.forEach((node, members) -> nodes.add(new Node(node, hostIps.get(node),
                members.stream().mapToInt(Member::devices).sum(), members)));
        return new Membership(nodes, skipped);
    }

    /** Why a pod that succeeded is not a member ({@link #notCounted}). */
    static final String SUCCEEDED = "phase Succeeded";
    /** The scheduling gate Kueue puts on the pods of an elastic Job until it admits them (a workload slice). */
    public static final String KUEUE_ELASTIC_GATE = "kueue.x-k8s.io/elastic-job";

    /** Why the pod is not a member, or null when it is. */
    static String notCounted(Pod p) {
        if (p.getMetadata().getDeletionTimestamp() != null) {
            return "terminating";
        }
        String gates = gates(p);
        if (gates != null) {
            return gates;
        }
        if (p.getStatus() == null || !"Running".equals(p.getStatus().getPhase())) {
            return "phase " + (p.getStatus() == null ? "unknown" : p.getStatus().getPhase());
        }
        boolean ready = false;
        if (p.getStatus().getConditions() != null) {
            for (PodCondition c : p.getStatus().getConditions()) {
                ready |= "Ready".equals(c.getType()) && "True".equals(c.getStatus());
            }
        }
        if (!ready) {
            return "not ready";
        }
        if (p.getSpec() == null || p.getSpec().getNodeName() == null || p.getStatus().getHostIP() == null) {
            return "not bound to a node with a host IP";
        }
        return null;
    }

    /** Why a pod with scheduling gates is not scheduled yet, or null when it has none. */
    private static String gates(Pod p) {
        if (p.getSpec() == null || p.getSpec().getSchedulingGates() == null || p.getSpec().getSchedulingGates().isEmpty()) {
            return null;
        }
        List<String> names = p.getSpec().getSchedulingGates().stream().map(g -> g.getName()).toList();
        return "not scheduled until its scheduling gates " + names + " are removed"
                + (names.contains(KUEUE_ELASTIC_GATE) ? " (Kueue has not admitted their workload slice yet)" : "");
    }

    /** The pod's device count (annotation, else GPU limits or requests, else 1). */
    static int devices(Pod p, String gpuResource) {
        Map<String, String> annotations = p.getMetadata().getAnnotations();
        if (annotations != null && annotations.containsKey(DEVICES_ANNOTATION)) {
            String v = annotations.get(DEVICES_ANNOTATION);
            try {
                int n = Integer.parseInt(v.strip());
                if (n >= 1) {
                    return n;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            throw new IllegalArgumentException("annotation " + DEVICES_ANNOTATION + "='" + v
                    + "' is not a positive integer");
        }
        BigDecimal sum = BigDecimal.ZERO;
        for (Container c : p.getSpec().getContainers()) {
            if (c.getResources() == null) {
                continue;
            }
            Quantity q = quantity(c.getResources().getLimits(), gpuResource);
            if (q == null) {
                q = quantity(c.getResources().getRequests(), gpuResource);
            }
            if (q != null) {
                sum = sum.add(Quantity.getAmountInBytes(q));
            }
        }
        if (sum.signum() == 0) {
            return 1;
        }
        try {
            return sum.intValueExact();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(gpuResource + " of " + sum.toPlainString() + " is not a whole number");
        }
    }

    private static Quantity quantity(Map<String, Quantity> m, String key) {
        return m == null ? null : m.get(key);
    }
}
