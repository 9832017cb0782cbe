package io.tenplex.adapters.kubernetes;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;

/** Training pods as the Kubernetes adapter sees them (namespace {@value #NS}, label {@code tenplex.io/job=j}). */
public final class Pods {
    public static final String NS = "training";

    private Pods() {
    }

    /** A pod on {@code node} (host IP {@code hostIp}, null when unscheduled) asking for {@code gpus} GPUs. */
    public static Pod pod(String name, String node, String hostIp, int gpus, boolean ready) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(NS).addToLabels("tenplex.io/job", "j")
                .endMetadata()
                .withNewSpec().withNodeName(node).addNewContainer().withName("train").withImage("tenplex/example")
                .withNewResources().addToLimits(PodMembership.DEFAULT_GPU_RESOURCE, new Quantity(Integer.toString(gpus)))
                .endResources().endContainer().endSpec()
                .withNewStatus().withPhase(ready ? "Running" : "Pending").withHostIP(hostIp)
                .withPodIP(hostIp == null ? null : "10.244." + hostIp.substring(hostIp.lastIndexOf('.') + 1) + ".10")
                .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition().endStatus()
                .build();
    }
}
