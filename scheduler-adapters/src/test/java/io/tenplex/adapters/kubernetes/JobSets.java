package io.tenplex.adapters.kubernetes;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The example's JobSet (deploy/kubernetes/overlays/jobset/jobset.yaml) in a mock API server, and what its controllers would change. */
public final class JobSets {
    private JobSets() {
    }

    /** The example JobSet, in {@code namespace}. */
    public static GenericKubernetesResource example(String namespace) throws IOException {
        try (InputStream in = Files.newInputStream(Path.of("..", "deploy", "kubernetes", "overlays", "jobset",
                "jobset.yaml"))) {
            GenericKubernetesResource js = Serialization.unmarshal(in, GenericKubernetesResource.class);
            js.getMetadata().setNamespace(namespace);
            return js;
        }
    }

    public static GenericKubernetesResource create(KubernetesClient client, GenericKubernetesResource js) {
        return client.genericKubernetesResources(OwnerWatch.JOBSETS).inNamespace(js.getMetadata().getNamespace())
                .resource(js).create();
    }

    /** What {@code kubectl patch} of the workers' parallelism and completions (a resize) does. */
    @SuppressWarnings("unchecked")
    public static void resize(KubernetesClient client, String namespace, String name, int pods) {
        client.genericKubernetesResources(OwnerWatch.JOBSETS).inNamespace(namespace).withName(name).edit(js -> {
            Map<String, Object> spec = (Map<String, Object>) js.getAdditionalProperties().get("spec");
            Map<String, Object> rj = ((List<Map<String, Object>>) spec.get("replicatedJobs")).get(0);
            Map<String, Object> job = (Map<String, Object>) ((Map<String, Object>) rj.get("template")).get("spec");
            job.put("parallelism", pods);
            job.put("completions", pods);
            return js;
        });
    }

    /** What the JobSet controller does at the end: a condition {@code type} ({@code Completed}, {@code Failed}) that is True. */
    public static void end(KubernetesClient client, String namespace, String name, String type) {
        client.genericKubernetesResources(OwnerWatch.JOBSETS).inNamespace(namespace).withName(name).edit(js -> {
            List<Object> conditions = new ArrayList<>();
            conditions.add(Map.of("type", "StartupPolicyCompleted", "status", "True"));
            conditions.add(Map.of("type", type, "status", "True", "reason", "AllJobsCompleted"));
            js.getAdditionalProperties().put("status", Map.of("conditions", conditions, "terminalState", type));
            return js;
        });
    }
}
