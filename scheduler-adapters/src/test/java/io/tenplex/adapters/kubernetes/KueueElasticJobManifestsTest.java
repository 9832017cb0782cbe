package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The elastic-Job overlay (deploy/kubernetes/overlays/kueue-elastic-job) as {@code kubectl kustomize} renders
 * it: the workers are one batch/v1 Job that Kueue (v0.19.2) treats as elastic and admits from the overlay's
 * LocalQueue, with the JobSet workers' Job spec and pods (so the Kueue overlay's quota test covers them), an
 * Indexed Job whose completions equal its parallelism (a resize changes both), without partial admission
 * (which Kueue refuses for elastic Jobs); the adapter is a Job of the JobSet adapter's pod following the
 * workers' Job, outside Kueue, allowed to read jobs and nothing more. (No cluster and no Kueue here.)
 */
class KueueElasticJobManifestsTest {
    private static final String ELASTIC = "kueue.x-k8s.io/elastic-job";
    private static final String QUEUE = "kueue.x-k8s.io/queue-name";
    @TempDir
    Path scratch;
    private List<JsonNode> docs;
    private JsonNode jobSet;

    @BeforeEach
    void render() throws Exception {
        Path kubectl = Manifests.kubectl();
        Assumptions.assumeTrue(kubectl != null, "kubectl renders the overlays; not installed here");
        docs = Manifests.renderTrees(kubectl, scratch, "kueue-elastic-job");
        jobSet = one(Manifests.renderTrees(kubectl, scratch, "jobset"), "JobSet", "gpt");
    }

    @Test
    void theOverlay_isTheKueueInstall_withJobsForTheJobSet() {
        List<String> kinds = new ArrayList<>();
        docs.forEach(d -> kinds.add(d.get("kind").asText() + " " + d.get("metadata").get("name").asText()));
        assertEquals(List.of("Namespace tenplex", "ServiceAccount tenplex-adapter", "Role tenplex-job-reader",
                "Role tenplex-pod-reader", "RoleBinding tenplex-adapter-reads-jobs", "RoleBinding tenplex-adapter-reads-pods",
                "Secret tenplex-token", "DaemonSet tenplexd", "Job gpt", "Job tenplex-adapter-gpt", "ClusterQueue tenplex",
                "LocalQueue tenplex", "ResourceFlavor tenplex-workers"), kinds);
        JsonNode role = one(docs, "Role", "tenplex-job-reader");
        assertEquals(1, role.get("rules").size());
        JsonNode rule = role.get("rules").get(0);
        assertEquals(List.of("batch"), Manifests.strings(rule.get("apiGroups")));
        assertEquals(List.of("jobs"), Manifests.strings(rule.get("resources")));
        assertEquals(List.of("get", "list", "watch"), Manifests.strings(rule.get("verbs")));
        JsonNode binding = one(docs, "RoleBinding", "tenplex-adapter-reads-jobs");
        assertEquals("tenplex-job-reader", binding.get("roleRef").get("name").asText());
        assertEquals("tenplex-adapter", binding.get("subjects").get(0).get("name").asText());
    }

    @Test
    void theWorkers_areAnElasticIndexedJob_inTheLocalQueue_withTheJobSetWorkersSpec() {
        JsonNode job = one(docs, "Job", "gpt");
        JsonNode meta = job.get("metadata");
        assertEquals("true", meta.get("annotations").get(ELASTIC).asText(), "Kueue resizes it through workload slices");
        assertFalse(meta.get("annotations").has("kueue.x-k8s.io/job-min-parallelism"),
                "partial admission, which Kueue refuses for an elastic Job");
        JsonNode local = one(docs, "LocalQueue", meta.get("labels").get(QUEUE).asText());
        assertEquals(meta.get("namespace"), local.get("metadata").get("namespace"));
        JsonNode spec = job.get("spec");
        assertEquals("Indexed", spec.get("completionMode").asText());
        assertEquals(spec.get("parallelism"), spec.get("completions"), "an elastic Indexed Job changes both together");
        assertEquals(jobSet.at("/spec/replicatedJobs/0/template/spec"), spec, "the JobSet workers' Job, pods and all");
        assertEquals("workers", jobSet.at("/spec/replicatedJobs/0/name").asText());
    }

    @Test
    void theAdapter_isAJobOfTheJobSetsAdapterPod_followingTheWorkersJob_outsideKueue() {
        JsonNode adapter = one(docs, "Job", "tenplex-adapter-gpt");
        assertFalse(adapter.get("metadata").path("labels").has(QUEUE), "Kueue leaves the adapter alone");
        ObjectNode spec = (ObjectNode) adapter.get("spec").deepCopy();
        JsonNode container = spec.at("/template/spec/containers/0");
        ArrayNode args = (ArrayNode) container.get("args");
        int at = Manifests.strings(args).indexOf("--batch-job=" + one(docs, "Job", "gpt").at("/metadata/name").asText());
        assertTrue(at >= 0, "it follows the workers' Job: " + args);
        assertTrue(Manifests.strings(args).stream().noneMatch(a -> a.startsWith("--selector")),
                "it selects the Job's pods by the Job controller's label, no other pods: " + args);
        args.set(at, new TextNode("--jobset=gpt"));
        ObjectNode jobSetAdapter = (ObjectNode) jobSet.at("/spec/replicatedJobs/1/template/spec").deepCopy();
        ArrayNode itsArgs = (ArrayNode) jobSetAdapter.at("/template/spec/containers/0/args");
        itsArgs.remove(Manifests.strings(itsArgs).indexOf("--selector=tenplex.io/job=gpt"));
        assertEquals(jobSetAdapter, spec, "the JobSet adapter's Job, following the workers' Job instead");
        assertEquals(java.util.Map.of(OwnerWatch.JOB_LABEL, "gpt"), KubernetesAdapter.Settings.jobPods("gpt"));
    }

    private static JsonNode one(List<JsonNode> docs, String kind, String name) {
        return docs.stream().filter(d -> d.get("kind").asText().equals(kind)
                && d.get("metadata").get("name").asText().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + kind + " " + name));
    }
}
