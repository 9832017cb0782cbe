package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The JobSet path's manifests (deploy/kubernetes/overlays/jobset): the JobSet validates against the
 * schema of the CRD that JobSet v0.12.0 publishes (kept in the test resources, {@link CrdSchema}), and
 * where {@code kubectl} is installed, the rendered overlay is the example install with the
 * StatefulSet's pods run by the JobSet instead: the same pod spec, labels the adapter follows, an
 * elastic Indexed Job. (No cluster, no JobSet controller: docs/SCHEDULING.md says what this covers.)
 */
class JobSetManifestsTest {
    static final String JOBSET_CRD = "/crds/jobset.x-k8s.io_jobsets-v0.12.0.yaml.gz";
    @TempDir
    Path scratch;

    /** The published CRDs the manifests' custom resources are checked against (test resources). */
    static List<CrdSchema> crds() throws IOException {
        return List.of(CrdSchema.load(JOBSET_CRD, "v1alpha2"),
                CrdSchema.load("/crds/trainer.kubeflow.org_trainingruntimes-v2.3.0.yaml.gz", "v1alpha1"),
                CrdSchema.load("/crds/trainer.kubeflow.org_trainjobs-v2.3.0.yaml.gz", "v1alpha1"),
                CrdSchema.load("/crds/kueue.x-k8s.io_resourceflavors-v0.19.2.yaml.gz", "v1beta2"),
                CrdSchema.load("/crds/kueue.x-k8s.io_clusterqueues-v0.19.2.yaml.gz", "v1beta2"),
                CrdSchema.load("/crds/kueue.x-k8s.io_localqueues-v0.19.2.yaml.gz", "v1beta2"));
    }

    /** Whether {@code file} holds custom resources (then all its documents are checked against their CRDs). */
    static boolean holdsCustomResources(Path file) throws IOException {
        List<CrdSchema> crds = crds();
        try (InputStream in = Files.newInputStream(file)) {
            return Manifests.trees(in).stream().anyMatch(d -> crds.stream().anyMatch(c -> c.apiVersion().equals(
                    d.path("apiVersion").asText())));
        }
    }

    /** Checks every document of {@code file} against its CRD's schema; whether the file held any. */
    static boolean checkedAgainstCrds(Path file) throws IOException {
        List<CrdSchema> crds = crds();
        List<JsonNode> docs;
        try (InputStream in = Files.newInputStream(file)) {
            docs = Manifests.trees(in);
        }
        for (JsonNode d : docs) {
            CrdSchema crd = crds.stream().filter(c -> c.kind().equals(d.path("kind").asText())
                    && c.apiVersion().equals(d.path("apiVersion").asText())).findFirst().orElseThrow(() ->
                    new AssertionError(file + ": no published CRD kept for " + d.path("apiVersion").asText() + " "
                            + d.path("kind").asText()));
            List<String> errors = crd.errors(d);
            assertTrue(errors.isEmpty(), file + ": " + d.path("kind").asText() + " " + d.path("metadata").path("name")
                    .asText() + " does not validate against its published CRD: " + errors);
        }
        return !docs.isEmpty();
    }

    private static JsonNode jobSet() throws IOException {
        try (InputStream in = Files.newInputStream(Manifests.JOBSET.resolve("jobset.yaml"))) {
            return Manifests.trees(in).get(0);
        }
    }

    @Test
    void theJobSet_validatesAgainstThePublishedCrd() throws Exception {
        assertTrue(checkedAgainstCrds(Manifests.JOBSET.resolve("jobset.yaml")));
    }

    /** The schema check can fail: each mistake a user could make is refused with its path. */
    @Test
    void theSchema_refusesWhatTheApiServerRefuses() throws Exception {
        CrdSchema schema = CrdSchema.load(JOBSET_CRD, "v1alpha2");
        refused(schema, j -> ((ObjectNode) j.get("spec")).put("replicatedJob", "x"), ".spec.replicatedJob: unknown field");
        refused(schema, j -> workers(j).put("parallelism", "2"), ".spec.replicatedJobs[0].template.spec.parallelism: "
                + "must be an integer");
        refused(schema, j -> ((ObjectNode) j.get("spec").get("replicatedJobs").get(0)).remove("name"),
                ".spec.replicatedJobs[0].name: required");
        refused(schema, j -> ((ObjectNode) j.get("spec").get("successPolicy")).put("operator", "Most"),
                ".spec.successPolicy.operator: \"Most\" is not one of");
        refused(schema, j -> ((ObjectNode) workers(j).get("template").get("spec").get("containers").get(0))
                .put("imagePullPolicy", 3), "containers[0].imagePullPolicy: must be a string");
        refused(schema, j -> ((ObjectNode) workers(j).get("template").get("spec")).put("restartPolicyy", "Never"),
                ".template.spec.restartPolicyy: unknown field");
        refused(schema, j -> ((ObjectNode) j).put("kind", "Job"), "not a jobset.x-k8s.io/v1alpha2 JobSet");
    }

    private static ObjectNode workers(JsonNode j) {
        return (ObjectNode) j.get("spec").get("replicatedJobs").get(0).get("template").get("spec");
    }

    private static void refused(CrdSchema schema, Consumer<JsonNode> change, String expected) throws IOException {
        JsonNode j = jobSet().deepCopy();
        change.accept(j);
        List<String> errors = schema.errors(j);
        assertTrue(errors.stream().anyMatch(e -> e.contains(expected)), "expected '" + expected + "' in " + errors);
    }

    /**
     * The workers: an elastic Indexed Job whose size is one number, whose completion completes the
     * JobSet; the adapter: one pod that follows this JobSet's workers and ends with it.
     */
    @Test
    void theWorkers_areAnElasticIndexedJob_thatCompletesTheJobSet_andTheAdapterEndsWithIt() throws Exception {
        JsonNode j = jobSet();
        JsonNode workers = replicatedJob(j, "workers");
        assertEquals(2, j.get("spec").get("replicatedJobs").size(), "the workers and the adapter");
        assertEquals(1, workers.get("replicas").asInt(), "one Job: its parallelism is the job's size");
        JsonNode spec = workers.get("template").get("spec");
        assertEquals("Indexed", spec.get("completionMode").asText());
        assertEquals(spec.get("parallelism"), spec.get("completions"), "an elastic Indexed Job changes both together");
        assertEquals("All", j.get("spec").get("successPolicy").get("operator").asText());
        assertEquals(List.of(new TextNode("workers")), list(j.get("spec").get("successPolicy").get("targetReplicatedJobs")),
                "the workers' completion completes the JobSet; the adapter then ends on its own");
        assertEquals("Never", spec.get("template").get("spec").get("restartPolicy").asText(), "podFailurePolicy needs it");
        JsonNode ignored = spec.get("podFailurePolicy").get("rules").get(0);
        assertEquals("Ignore", ignored.get("action").asText());
        assertEquals("In", ignored.get("onExitCodes").get("operator").asText());
        assertEquals(List.of(String.valueOf(launcherTerminated())), Manifests.strings(ignored.get("onExitCodes")
                .get("values")), "a deleted pod's launcher status is neither a failure nor a completion");
        JsonNode adapter = replicatedJob(j, "adapter").get("template").get("spec");
        assertEquals(1, adapter.get("parallelism").asInt());
        assertEquals(1, adapter.get("completions").asInt());
        JsonNode container = adapter.get("template").get("spec").get("containers").get(0);
        assertEquals(j.get("metadata").get("name").asText(), arg(container, "--jobset"), "it follows this JobSet");
        assertTrue(container.get("args").toString().indexOf("--replicated-job") < 0,
                "its default replicated job, workers");
    }

    /** The status a launcher whose pod is deleted exits with (tenplex.launchers.assignment.TERMINATED). */
    static int launcherTerminated() throws IOException {
        for (String line : Files.readAllLines(Path.of("..", "clients", "python", "tenplex", "launchers",
                "assignment.py"))) {
            if (line.startsWith("TERMINATED = ")) {
                int status = Integer.parseInt(line.substring("TERMINATED = ".length()).strip());
                assertTrue(status != 0, "never 0: a Job would count the index as completed");
                return status;
            }
        }
        throw new AssertionError("no TERMINATED in the launcher");
    }

    private static JsonNode replicatedJob(JsonNode jobSet, String name) {
        for (JsonNode rj : jobSet.get("spec").get("replicatedJobs")) {
            if (rj.get("name").asText().equals(name)) {
                return rj;
            }
        }
        throw new AssertionError("no replicated job " + name);
    }

    /**
     * The rendered overlay: the example install with no StatefulSet or its Service, and the JobSet's pods
     * equal to the StatefulSet's but for the Job's restart policy, labelled as the adapter selects.
     */
    @Test
    void theOverlay_runsTheExamplesPods_asAJobSet() throws Exception {
        Path kubectl = Manifests.kubectl();
        Assumptions.assumeTrue(kubectl != null, "kubectl renders the overlays; not installed here");
        List<JsonNode> jobset = Manifests.renderTrees(kubectl, scratch, "jobset");
        List<JsonNode> example = Manifests.renderTrees(kubectl, scratch, "example");
        List<String> kinds = new ArrayList<>();
        jobset.forEach(d -> kinds.add(d.get("kind").asText() + " " + d.get("metadata").get("name").asText()));
        assertEquals(List.of("Namespace tenplex", "ServiceAccount tenplex-adapter", "Role tenplex-jobset-reader",
                "Role tenplex-pod-reader", "RoleBinding tenplex-adapter-reads-jobsets", "RoleBinding tenplex-adapter-reads-pods",
                "Secret tenplex-token", "DaemonSet tenplexd", "JobSet gpt"), kinds);
        JsonNode js = one(jobset, "JobSet", "gpt");
        assertEquals("tenplex", js.get("metadata").get("namespace").asText());
        assertTrue(CrdSchema.load(JOBSET_CRD, "v1alpha2").errors(js).isEmpty());
        ObjectNode pods = podTemplate(js, "workers");
        assertEquals(one(example, "StatefulSet", "gpt").get("spec").get("template"), pods,
                "the JobSet's pods are the StatefulSet's");
        ObjectNode adapter = podTemplate(js, "adapter");
        ArrayNodeArgs.remove(adapter.get("spec").get("containers").get(0), "--jobset=gpt");
        assertEquals(one(example, "Deployment", "tenplex-adapter-gpt").get("spec").get("template"), adapter,
                "the adapter's pod is the Deployment's, with --jobset");
        String selector = arg(adapter.get("spec").get("containers").get(0), "--selector");
        KubernetesAdapter.Settings.parseSelector(selector).forEach((k, v) -> assertEquals(new TextNode(v),
                pods.get("metadata").get("labels").get(k), "the adapter selects the JobSet's pods by " + k));
    }

    /** A replicated job's pod template, without the Job's restart policy. */
    private static ObjectNode podTemplate(JsonNode jobSet, String replicatedJob) {
        ObjectNode pods = (ObjectNode) replicatedJob(jobSet, replicatedJob).get("template").get("spec").get("template")
                .deepCopy();
        ((ObjectNode) pods.get("spec")).remove("restartPolicy");
        return pods;
    }

    /** Removes one argument from a container's {@code args}. */
    private static final class ArrayNodeArgs {
        static void remove(JsonNode container, String arg) {
            com.fasterxml.jackson.databind.node.ArrayNode args = (com.fasterxml.jackson.databind.node.ArrayNode)
                    container.get("args");
            for (int i = 0; i < args.size(); i++) {
                if (args.get(i).asText().equals(arg)) {
                    args.remove(i);
                    return;
                }
            }
            throw new AssertionError("no argument " + arg + " in " + args);
        }
    }

    private static JsonNode one(List<JsonNode> docs, String kind, String name) {
        return docs.stream().filter(d -> d.get("kind").asText().equals(kind)
                && d.get("metadata").get("name").asText().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + kind + " " + name));
    }

    private static String arg(JsonNode container, String name) {
        for (JsonNode a : container.get("args")) {
            if (a.asText().startsWith(name + "=")) {
                return a.asText().substring(name.length() + 1);
            }
        }
        throw new AssertionError("no " + name + " in " + container.get("args"));
    }

    private static List<JsonNode> list(JsonNode array) {
        List<JsonNode> out = new ArrayList<>();
        array.forEach(out::add);
        return out;
    }
}
