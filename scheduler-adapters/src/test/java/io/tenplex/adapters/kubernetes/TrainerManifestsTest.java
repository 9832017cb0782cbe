package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Kubeflow Trainer v2 example (deploy/kubernetes/overlays/kubeflow-trainer): its TrainingRuntime and
 * TrainJob validate against the CRDs Trainer v2.3.0 publishes, the runtime's JobSet is overlays/jobset's
 * but for what Trainer needs, and the TrainJob makes the JobSet the adapter follows.
 */
class TrainerManifestsTest {
    @TempDir
    Path scratch;

    private static JsonNode file(String name) throws IOException {
        try (InputStream in = Files.newInputStream(Manifests.TRAINER.resolve(name))) {
            return Manifests.trees(in).get(0);
        }
    }

    @Test
    void theRuntimeAndTheTrainJob_validateAgainstThePublishedCrds() throws Exception {
        assertTrue(JobSetManifestsTest.checkedAgainstCrds(Manifests.TRAINER.resolve("training-runtime.yaml")));
        assertTrue(JobSetManifestsTest.checkedAgainstCrds(Manifests.TRAINER.resolve("trainjob.yaml")));
    }

    /**
     * The runtime's JobSet is overlays/jobset's JobSet spec with Trainer's names (the trainer job
     * {@code node}, labelled as Trainer's ancestor step, its container {@code node}), its size left to
     * the TrainJob, and the adapter told the replicated job's name.
     */
    @Test
    void theRuntimesJobSet_isTheJobSetExamples_withTrainersNames() throws Exception {
        JsonNode jobSet;
        try (InputStream in = Files.newInputStream(Manifests.JOBSET.resolve("jobset.yaml"))) {
            jobSet = Manifests.trees(in).get(0);
        }
        ObjectNode want = (ObjectNode) jobSet.get("spec").deepCopy();
        ObjectNode node = (ObjectNode) want.get("replicatedJobs").get(0);
        assertEquals("workers", node.get("name").asText());
        node.put("name", "node");
        ObjectNode job = (ObjectNode) node.get("template").get("spec");
        job.remove(List.of("parallelism", "completions"));
        ((ObjectNode) node.get("template")).putObject("metadata").putObject("labels")
                .put("trainer.kubeflow.org/trainjob-ancestor-step", "trainer");
        ((ObjectNode) job.get("template").get("spec").get("containers").get(0)).put("name", "node");
        ((ArrayNode) want.get("successPolicy").get("targetReplicatedJobs")).removeAll().add("node");
        ArrayNode args = (ArrayNode) want.get("replicatedJobs").get(1).get("template").get("spec").get("template")
                .get("spec").get("containers").get(0).get("args");
        for (int i = 0; i < args.size(); i++) {
            if (args.get(i).asText().equals("--jobset=gpt")) {
                args.insert(i + 1, "--replicated-job=node");
                break;
            }
        }
        JsonNode runtime = file("training-runtime.yaml");
        assertEquals(want, runtime.get("spec").get("template").get("spec"));
        assertTrue(runtime.get("spec").get("mlPolicy").path("torch").isMissingNode(),
                "no torch policy: tenplex.launch starts the ranks, Trainer injects no torchrun settings");
    }

    /** The TrainJob names the runtime, and Trainer names its JobSet after it: the one the adapter follows. */
    @Test
    void theTrainJob_makesTheJobSetTheAdapterFollows() throws Exception {
        JsonNode trainJob = file("trainjob.yaml");
        JsonNode runtime = file("training-runtime.yaml");
        assertEquals(runtime.get("metadata").get("name"), trainJob.get("spec").get("runtimeRef").get("name"));
        assertEquals(runtime.get("kind"), trainJob.get("spec").get("runtimeRef").get("kind"));
        assertTrue(trainJob.get("spec").get("trainer").get("numNodes").asInt() >= 1);
        JsonNode adapter = runtime.get("spec").get("template").get("spec").get("replicatedJobs").get(1);
        List<String> args = new ArrayList<>();
        adapter.get("template").get("spec").get("template").get("spec").get("containers").get(0).get("args")
                .forEach(a -> args.add(a.asText()));
        assertTrue(args.contains("--jobset=" + trainJob.get("metadata").get("name").asText()), args.toString());
    }

    @Test
    void theOverlay_rendersTheInstall_withTheRuntimeAndTheTrainJob_andNoJobSet() throws Exception {
        Path kubectl = Manifests.kubectl();
        Assumptions.assumeTrue(kubectl != null, "kubectl renders the overlays; not installed here");
        List<String> kinds = new ArrayList<>();
        for (JsonNode d : Manifests.renderTrees(kubectl, scratch, "kubeflow-trainer")) {
            kinds.add(d.get("kind").asText() + " " + d.get("metadata").get("name").asText());
            assertEquals("tenplex", d.get("metadata").path("namespace").asText("tenplex"), d.toString());
        }
        assertEquals(List.of("Namespace tenplex", "ServiceAccount tenplex-adapter", "Role tenplex-jobset-reader",
                "Role tenplex-pod-reader", "RoleBinding tenplex-adapter-reads-jobsets", "RoleBinding tenplex-adapter-reads-pods",
                "Secret tenplex-token", "DaemonSet tenplexd", "TrainJob gpt", "TrainingRuntime tenplex-gpt"), kinds);
    }
}
