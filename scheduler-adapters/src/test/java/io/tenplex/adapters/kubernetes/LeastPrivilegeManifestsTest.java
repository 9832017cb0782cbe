package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The daemon at its least privilege (deploy/kubernetes/overlays/jobset-least-privilege: the JobSet install
 * with components/rest-only and components/pod-network), as {@code kubectl kustomize} renders it next to
 * overlays/jobset: no privilege, capability, FUSE device, mount or propagation, not on the host network, and
 * a NetworkPolicy that admits every pod that talks to the daemon (the workers, the adapter, the other
 * daemons) on the API port and nothing else; the rest of the install unchanged.
 */
class LeastPrivilegeManifestsTest {
    @TempDir
    Path scratch;
    private List<JsonNode> least;
    private List<JsonNode> full;

    @BeforeEach
    void render() throws Exception {
        Path kubectl = Manifests.kubectl();
        Assumptions.assumeTrue(kubectl != null, "kubectl renders the overlays; not installed here");
        least = Manifests.renderTrees(kubectl, scratch, "jobset-least-privilege");
        full = Manifests.renderTrees(kubectl, scratch, "jobset");
    }

    private static JsonNode one(List<JsonNode> docs, String kind) {
        return docs.stream().filter(d -> d.get("kind").asText().equals(kind)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + kind));
    }

    @Test
    void theDaemon_hasNoPrivilege_noFuse_andIsNotOnTheHostNetwork() {
        JsonNode pod = one(least, "DaemonSet").get("spec").get("template").get("spec");
        JsonNode c = pod.get("containers").get(0);
        assertFalse(pod.path("hostNetwork").asBoolean(false));
        JsonNode sc = c.get("securityContext");
        assertFalse(sc.path("privileged").asBoolean(true));
        assertFalse(sc.path("allowPrivilegeEscalation").asBoolean(true));
        assertEquals(List.of("ALL"), Manifests.strings(sc.get("capabilities").get("drop")));
        assertTrue(sc.get("capabilities").path("add").isMissingNode(), "no capability added");
        assertEquals("20010", c.get("ports").get(0).get("hostPort").asText(), "still at <node IP>:20010");
        assertFalse(pod.get("volumes").toString().contains("/dev/fuse"), pod.get("volumes").toString());
        for (JsonNode m : c.get("volumeMounts")) {
            assertTrue(m.path("mountPropagation").asText("None").equals("None"), m.toString());
        }
        JsonNode fullContainer = one(full, "DaemonSet").get("spec").get("template").get("spec").get("containers").get(0);
        List<String> args = Manifests.strings(fullContainer.get("args"));
        assertTrue(args.remove("--mount=/var/lib/tenplex/mnt"), "the full daemon mounts FUSE: " + args);
        assertEquals(args, Manifests.strings(c.get("args")), "the same daemon but for the mount");
    }

    @Test
    void theWorkers_readTheirDatasetsOverRest_andTheJobSetIsOtherwiseTheSame() throws Exception {
        JsonNode jobSet = one(least, "JobSet");
        assertTrue(CrdSchema.load(JobSetManifestsTest.JOBSET_CRD, "v1alpha2").errors(jobSet).isEmpty());
        JsonNode worker = jobSet.get("spec").get("replicatedJobs").get(0).get("template").get("spec").get("template")
                .get("spec").get("containers").get(0);
        JsonNode fullWorker = one(full, "JobSet").get("spec").get("replicatedJobs").get(0).get("template").get("spec")
                .get("template").get("spec").get("containers").get(0);
        List<String> args = Manifests.strings(fullWorker.get("args"));
        int at = args.indexOf("--mount");
        assertEquals("/var/lib/tenplex/mnt", args.remove(at + 1));
        args.remove(at);
        assertEquals(args, Manifests.strings(worker.get("args")));
        assertEquals(List.of("Namespace", "ServiceAccount", "Role", "Role", "RoleBinding", "RoleBinding", "Secret",
                "DaemonSet", "JobSet", "NetworkPolicy"), kinds(least));
        assertEquals(kinds(full), kinds(least).subList(0, kinds(least).size() - 1), "only the NetworkPolicy is new");
    }

    private static List<String> kinds(List<JsonNode> docs) {
        List<String> out = new ArrayList<>();
        docs.forEach(d -> out.add(d.get("kind").asText()));
        return out;
    }

    /** The policy admits the workers, the adapter and the other daemons, on the API port, and no other pod. */
    @Test
    void theNetworkPolicy_admitsThePodsThatTalkToTheDaemon_andNoOther() {
        JsonNode policy = one(least, "NetworkPolicy").get("spec");
        JsonNode daemonLabels = one(least, "DaemonSet").get("spec").get("template").get("metadata").get("labels");
        assertTrue(selects(policy.get("podSelector"), daemonLabels), "it applies to the daemons");
        assertEquals(List.of("Ingress"), Manifests.strings(policy.get("policyTypes")));
        assertEquals(1, policy.get("ingress").size());
        JsonNode rule = policy.get("ingress").get(0);
        assertEquals("20010", rule.get("ports").get(0).get("port").asText());
        List<JsonNode> talkers = new ArrayList<>(List.of(daemonLabels));
        for (JsonNode rj : one(least, "JobSet").get("spec").get("replicatedJobs")) {
            talkers.add(rj.get("template").get("spec").get("template").get("metadata").get("labels"));
        }
        for (JsonNode labels : talkers) {
            assertTrue(admitted(rule, labels), "admitted: " + labels);
        }
        assertFalse(admitted(rule, new com.fasterxml.jackson.databind.ObjectMapper().valueToTree(Map.of("app", "other"))));
        assertFalse(admitted(rule, new com.fasterxml.jackson.databind.ObjectMapper().valueToTree(
                Map.of("tenplex.io/job", "another-job"))), "another job's pods are not");
    }

    private static boolean admitted(JsonNode rule, JsonNode labels) {
        for (JsonNode from : rule.get("from")) {
            if (from.has("podSelector") && !from.has("namespaceSelector") && selects(from.get("podSelector"), labels)) {
                return true;
            }
        }
        return false;
    }

    /** Whether a label selector (matchLabels, and matchExpressions with In or Exists) selects {@code labels}. */
    private static boolean selects(JsonNode selector, JsonNode labels) {
        var it = selector.path("matchLabels").fields();
        while (it.hasNext()) {
            var e = it.next();
            if (!e.getValue().equals(labels.get(e.getKey()))) {
                return false;
            }
        }
        for (JsonNode x : selector.path("matchExpressions")) {
            JsonNode v = labels.get(x.get("key").asText());
            switch (x.get("operator").asText()) {
                case "Exists" -> {
                    if (v == null) {
                        return false;
                    }
                }
                case "In" -> {
                    if (v == null || !Manifests.strings(x.get("values")).contains(v.asText())) {
                        return false;
                    }
                }
                default -> throw new AssertionError("operator not checked here: " + x);
            }
        }
        return true;
    }
}
