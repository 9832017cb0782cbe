package io.tenplex.adapters.kubernetes;

import static io.tenplex.adapters.kubernetes.Pods.pod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.tenplex.adapters.kubernetes.PodMembership.Membership;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which pods count and how many devices they bring (pure: pod objects in, membership out). */
class PodMembershipTest {
    private static final String GPU = PodMembership.DEFAULT_GPU_RESOURCE;

    @Test
    void readyRunningBoundPodsCount_perNode_withTheirGpus() {
        Pod terminating = pod("t", "node-a", "10.0.0.1", 4, true);
        terminating.getMetadata().setDeletionTimestamp("2026-01-01T00:00:00Z");
        Pod unbound = pod("u", null, null, 1, true);
        Pod notReady = pod("n", "node-a", "10.0.0.1", 1, true);
        notReady.getStatus().getConditions().get(0).setStatus("False");
        Membership m = PodMembership.of(List.of(pod("b1", "node-b", "10.0.0.2", 1, true),
                pod("a1", "node-a", "10.0.0.1", 2, true), pod("b0", "node-b", "10.0.0.2", 2, true),
                pod("p", "node-c", "10.0.0.3", 8, false), terminating, unbound, notReady), GPU);
        assertEquals(Map.of("node-a", 2, "node-b", 3), m.shape());
        assertEquals(5, m.devices());
        assertEquals(List.of("b0", "b1"), m.nodes().get(1).pods().stream().map(PodMembership.Member::pod).toList());
        assertEquals("10.0.0.2", m.nodes().get(1).hostIp());
        assertEquals(Map.of("p", "phase Pending", "t", "terminating", "u", "not bound to a node with a host IP",
                "n", "not ready"), m.skipped());
    }

    /** A pod held by a scheduling gate says so (not only "phase Pending"); Kueue's gate is named as Kueue's. */
    @Test
    void podsHeldByASchedulingGate_areNotCounted_andSayWhy() {
        Pod kueue = pod("k", null, null, 1, false); // as the API server keeps a gated pod: unbound, Pending
        kueue.getSpec().getSchedulingGates().add(ElasticJobs.kueueGate());
        Pod other = pod("o", null, null, 1, false);
        other.getSpec().getSchedulingGates().add(new io.fabric8.kubernetes.api.model.PodSchedulingGate("example.com/quota"));
        Membership m = PodMembership.of(List.of(kueue, other, pod("r", "node-b", "10.0.0.2", 1, true)), GPU);
        assertEquals(Map.of("node-b", 1), m.shape());
        assertEquals(Map.of("k", "not scheduled until its scheduling gates [kueue.x-k8s.io/elastic-job] are removed "
                + "(Kueue has not admitted their workload slice yet)", "o", "not scheduled until its scheduling gates "
                + "[example.com/quota] are removed"), m.skipped());
    }

    @Test
    void devices_annotationThenLimitsThenRequestsThenOne() {
        Pod annotated = pod("a", "n", "10.0.0.1", 4, true);
        annotated.getMetadata().setAnnotations(Map.of(PodMembership.DEVICES_ANNOTATION, " 3 "));
        assertEquals(3, PodMembership.devices(annotated, GPU));

        Pod requests = pod("r", "n", "10.0.0.1", 1, true);
        var res = requests.getSpec().getContainers().get(0).getResources();
        res.setLimits(Map.of("cpu", new Quantity("2")));
        res.setRequests(Map.of(GPU, new Quantity("2")));
        assertEquals(2, PodMembership.devices(requests, GPU));

        Pod cpuOnly = pod("c", "n", "10.0.0.1", 1, true);
        cpuOnly.getSpec().getContainers().get(0).getResources().setLimits(Map.of("cpu", new Quantity("500m")));
        assertEquals(1, PodMembership.devices(cpuOnly, GPU));

        Pod two = pod("two", "n", "10.0.0.1", 2, true);
        two.getSpec().getContainers().add(two.getSpec().getContainers().get(0));
        assertEquals(4, PodMembership.devices(two, GPU), "containers add up");
        assertEquals(1, PodMembership.devices(two, "amd.com/gpu"), "another resource name");

        for (String bad : List.of("0", "-1", "two", "")) {
            Pod p = pod("b", "n", "10.0.0.1", 1, true);
            p.getMetadata().setAnnotations(Map.of(PodMembership.DEVICES_ANNOTATION, bad));
            Membership m = PodMembership.of(List.of(p), GPU);
            assertTrue(m.nodes().isEmpty());
            assertTrue(m.skipped().get("b").contains("is not a positive integer"), m.skipped().toString());
        }
    }

    @Test
    void selectorAndSettings_areChecked() {
        assertEquals(Map.of("app", "gpt", "tenplex.io/job", "j"),
                KubernetesAdapter.Settings.parseSelector("tenplex.io/job=j, app==gpt"));
        for (String bad : List.of("", "app", "app!=gpt", "=gpt", "app=", "a=b=c", "app in (gpt)")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> KubernetesAdapter.Settings.parseSelector(bad), bad);
            assertTrue(e.getMessage().contains("equality selectors only"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> new KubernetesAdapter.Settings("ns", Map.of(), "j", GPU,
                20010, "127.0.0.1:20010", null, Duration.ZERO, Duration.ofMinutes(1)));
        assertThrows(IllegalArgumentException.class, () -> new KubernetesAdapter.Settings("ns", Map.of("a", "b"), "j",
                GPU, 0, "127.0.0.1:20010", null, Duration.ZERO, Duration.ofMinutes(1)));
    }
}
