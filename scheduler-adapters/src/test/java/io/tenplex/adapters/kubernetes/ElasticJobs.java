package io.tenplex.adapters.kubernetes;

import io.fabric8.kubernetes.api.model.PodSchedulingGate;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.batch.v1.JobCondition;
import io.fabric8.kubernetes.api.model.batch.v1.JobConditionBuilder;
import io.fabric8.kubernetes.api.model.batch.v1.JobStatus;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The example's elastic workers' Job (deploy/kubernetes/overlays/kueue-elastic-job/workers.yaml) in a mock API
 * server, and what Kueue and the Job controller would change: a resize, Kueue's scheduling gate on the pods
 * of a slice it has not admitted, the Job's end.
 */
public final class ElasticJobs {
    private ElasticJobs() {
    }

    /** The example's workers' Job, in {@code namespace}. */
    public static Job example(KubernetesClient client, String namespace) throws IOException {
        try (InputStream in = Files.newInputStream(Path.of("..", "deploy", "kubernetes", "overlays", "kueue-elastic-job",
                "workers.yaml"))) {
            Job job = client.batch().v1().jobs().load(in).item();
            job.getMetadata().setNamespace(namespace);
            return job;
        }
    }

    public static Job create(KubernetesClient client, Job job) {
        return client.batch().v1().jobs().inNamespace(job.getMetadata().getNamespace()).resource(job).create();
    }

    /** What {@code kubectl patch} of the Job's parallelism and completions (a resize) does. */
    public static void resize(KubernetesClient client, String namespace, String name, int pods) {
        client.batch().v1().jobs().inNamespace(namespace).withName(name).edit(j -> {
            j.getSpec().setParallelism(pods);
            j.getSpec().setCompletions(pods);
            return j;
        });
    }

    /** What the Job controller does at the end: a final condition {@code type} ({@code Complete}, {@code Failed}). */
    public static void end(KubernetesClient client, String namespace, String name, String type) {
        client.batch().v1().jobs().inNamespace(namespace).withName(name).edit(j -> {
            List<JobCondition> conditions = new ArrayList<>();
            conditions.add(new JobConditionBuilder().withType("SuccessCriteriaMet").withStatus("True").build());
            conditions.add(new JobConditionBuilder().withType(type).withStatus("True").build());
            JobStatus status = new JobStatus();
            status.setConditions(conditions);
            j.setStatus(status);
            return j;
        });
    }

    /** Kueue's gate on a pod of an elastic Job until it admits the workload slice the pod belongs to. */
    public static PodSchedulingGate kueueGate() {
        return new PodSchedulingGate(PodMembership.KUEUE_ELASTIC_GATE);
    }
}
