package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Quantity;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Kueue overlay (deploy/kubernetes/overlays/kueue) as {@code kubectl kustomize} renders it: the queues
 * validate against the CRDs Kueue v0.19.2 publishes, the JobSet waits in the LocalQueue its label names,
 * and the ClusterQueue behind it can admit the whole JobSet at once (a gang) up to 8 workers, on the
 * nodes the workers run on. (No cluster and no Kueue here: what Kueue then does is in docs/SCHEDULING.md.)
 */
class KueueManifestsTest {
    private static final Set<String> CLUSTER_SCOPED = Set.of("Namespace", "ClusterQueue", "ResourceFlavor");
    private static final int MOST_WORKERS = 8;
    @TempDir
    Path scratch;
    private List<JsonNode> docs;

    @BeforeEach
    void render() throws Exception {
        Path kubectl = Manifests.kubectl();
        Assumptions.assumeTrue(kubectl != null, "kubectl renders the overlays; not installed here");
        docs = Manifests.renderTrees(kubectl, scratch, "kueue");
    }

    private JsonNode one(String kind) {
        List<JsonNode> of = docs.stream().filter(d -> d.get("kind").asText().equals(kind)).toList();
        assertEquals(1, of.size(), "one " + kind);
        return of.get(0);
    }

    @Test
    void theQueues_validateAgainstThePublishedCrds_andOnlyTheNamespacedOnesHaveANamespace() throws Exception {
        assertTrue(JobSetManifestsTest.checkedAgainstCrds(Manifests.KUEUE.resolve("queues.yaml")));
        for (JsonNode d : docs) {
            assertEquals(!CLUSTER_SCOPED.contains(d.get("kind").asText()), d.get("metadata").has("namespace"),
                    d.get("kind").asText() + " " + d.get("metadata").get("name").asText());
        }
    }

    @Test
    void theJobSet_waitsInTheLocalQueue_ofTheClusterQueue_openToItsNamespace() {
        JsonNode jobSet = one("JobSet");
        JsonNode local = one("LocalQueue");
        JsonNode cluster = one("ClusterQueue");
        assertEquals(local.get("metadata").get("name"), jobSet.get("metadata").get("labels").get("kueue.x-k8s.io/queue-name"));
        assertEquals(jobSet.get("metadata").get("namespace"), local.get("metadata").get("namespace"));
        assertEquals(cluster.get("metadata").get("name"), local.get("spec").get("clusterQueue"));
        assertEquals(local.get("metadata").get("namespace"),
                cluster.get("spec").get("namespaceSelector").get("matchLabels").get("kubernetes.io/metadata.name"));
    }

    /** Every resource the JobSet's pods request is covered, on a flavor of the workers' nodes, with room for all of them at once. */
    @Test
    void theClusterQueue_admitsTheWholeJobSet_upTo8Workers_onTheWorkersNodes() {
        JsonNode jobSet = one("JobSet");
        JsonNode group = one("ClusterQueue").get("spec").get("resourceGroups").get(0);
        JsonNode flavor = group.get("flavors").get(0);
        JsonNode flavorObject = one("ResourceFlavor");
        assertEquals(flavorObject.get("metadata").get("name"), flavor.get("name"));
        Map<String, BigDecimal> need = new HashMap<>();
        for (JsonNode rj : jobSet.get("spec").get("replicatedJobs")) {
            JsonNode pod = rj.get("template").get("spec").get("template").get("spec");
            int pods = rj.get("name").asText().equals("workers") ? MOST_WORKERS : rj.get("replicas").asInt()
                    * rj.get("template").get("spec").get("parallelism").asInt();
            if (rj.get("name").asText().equals("workers")) {
                flavorObject.get("spec").get("nodeLabels").fields().forEachRemaining(l -> assertEquals(l.getValue(),
                        pod.get("nodeSelector").get(l.getKey()), "the flavor is the workers' nodes: " + l.getKey()));
            }
            for (JsonNode c : pod.get("containers")) {
                c.path("resources").path("requests").fields().forEachRemaining(r -> need.merge(r.getKey(),
                        Quantity.getAmountInBytes(new Quantity(r.getValue().asText())).multiply(BigDecimal.valueOf(pods)),
                        BigDecimal::add));
            }
        }
        assertFalse(need.isEmpty());
        Map<String, BigDecimal> quota = new HashMap<>();
        flavor.get("resources").forEach(r -> quota.put(r.get("name").asText(),
                Quantity.getAmountInBytes(new Quantity(r.get("nominalQuota").asText()))));
        List<String> covered = Manifests.strings(group.get("coveredResources"));
        need.forEach((resource, amount) -> {
            assertTrue(covered.contains(resource), resource + " is requested but not covered: " + covered);
            assertTrue(quota.get(resource).compareTo(amount) >= 0, resource + ": " + amount + " needed for "
                    + MOST_WORKERS + " workers and the adapter, quota " + quota.get(resource));
        });
    }
}
