package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every overlay under deploy/kubernetes/overlays renders with {@code kubectl kustomize}, and every object it
 * renders validates: Kubernetes kinds parse strictly with fabric8's model (generated from the Kubernetes
 * API's schema: an unknown kind or field fails), custom resources against their projects' published CRDs.
 */
@EnableKubernetesMockClient(crud = true)
class EveryOverlayTest {
    KubernetesClient client;
    @TempDir
    Path scratch;

    @Test
    void everyOverlay_renders_andEveryObjectValidates() throws Exception {
        Path kubectl = Manifests.kubectl();
        Assumptions.assumeTrue(kubectl != null, "kubectl renders the overlays; not installed here");
        List<CrdSchema> crds = JobSetManifestsTest.crds();
        ObjectMapper json = new ObjectMapper();
        List<Path> overlays;
        try (Stream<Path> dirs = Files.list(Manifests.DIR.resolve("overlays"))) {
            overlays = dirs.filter(Files::isDirectory).sorted().toList();
        }
        assertTrue(overlays.size() >= 5, overlays.toString());
        for (Path overlay : overlays) {
            List<JsonNode> docs = Manifests.renderTrees(kubectl, scratch, overlay.getFileName().toString());
            assertFalse(docs.isEmpty(), overlay.toString());
            for (JsonNode d : docs) {
                String what = overlay.getFileName() + ": " + d.path("kind").asText() + " " + d.path("metadata")
                        .path("name").asText();
                CrdSchema crd = crds.stream().filter(c -> c.apiVersion().equals(d.path("apiVersion").asText())
                        && c.kind().equals(d.path("kind").asText())).findFirst().orElse(null);
                if (crd != null) {
                    List<String> errors = crd.errors(d);
                    assertTrue(errors.isEmpty(), what + ": " + errors);
                } else {
                    Manifests.parse(client, new ByteArrayInputStream(json.writeValueAsBytes(d)), what);
                }
            }
        }
    }
}
