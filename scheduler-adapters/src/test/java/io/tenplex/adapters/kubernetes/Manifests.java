package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Reads the manifests under deploy/kubernetes strictly with fabric8's Kubernetes model: every
 * document must be a kind the model knows (not a generic resource), and no object of it may have a
 * field the model does not know (fabric8 keeps those in {@code additionalProperties}, which must stay
 * empty everywhere: a misspelt or misplaced field fails here as it would fail a strict API server).
 */
final class Manifests {
    static final Path DIR = Path.of("..", "deploy", "kubernetes");
    static final Path BASE = DIR.resolve("base");
    static final Path EXAMPLE = DIR.resolve("overlays").resolve("example");
    static final Path JOBSET = DIR.resolve("overlays").resolve("jobset");
    static final Path TRAINER = DIR.resolve("overlays").resolve("kubeflow-trainer");
    static final Path KUEUE = DIR.resolve("overlays").resolve("kueue");
    static final Path LEAST_PRIVILEGE = DIR.resolve("overlays").resolve("jobset-least-privilege");
    static final Path REST_ONLY = DIR.resolve("components").resolve("rest-only");
    static final Path POD_NETWORK = DIR.resolve("components").resolve("pod-network");
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final Set<String> KUSTOMIZATION_KEYS = Set.of("apiVersion", "kind", "namespace", "resources",
            "secretGenerator", "patches", "components");

    private Manifests() {
    }

    /** Every document of {@code yaml}, each checked strictly; {@code where} names it in failures. */
    static List<HasMetadata> parse(KubernetesClient client, InputStream yaml, String where) {
        List<HasMetadata> items = client.load(yaml).items();
        for (HasMetadata r : items) {
            String at = where + ": " + r.getKind() + " " + r.getMetadata().getName();
            if (r instanceof GenericKubernetesResource) {
                throw new AssertionError(at + " is not a kind of the Kubernetes model (apiVersion " + r.getApiVersion() + ")");
            }
            List<String> unknown = new ArrayList<>();
            unknownFields(r, "", unknown);
            if (!unknown.isEmpty()) {
                throw new AssertionError(at + " has fields the Kubernetes model does not know: " + unknown);
            }
        }
        return items;
    }

    static List<HasMetadata> parse(KubernetesClient client, Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return parse(client, in, file.toString());
        }
    }

    /** Paths of fields that landed in some object's {@code additionalProperties}. */
    static void unknownFields(Object o, String path, List<String> out) {
        if (o instanceof Collection<?> c) {
            int i = 0;
            for (Object e : c) {
                unknownFields(e, path + "[" + i++ + "]", out);
            }
        } else if (o instanceof Map<?, ?> m) {
            m.forEach((k, v) -> unknownFields(v, path + "." + k, out));
        } else if (o != null && o.getClass().getName().startsWith("io.fabric8.kubernetes.api.model.")) {
            for (Method g : o.getClass().getMethods()) {
                if (g.getParameterCount() != 0 || !g.getName().startsWith("get") || g.getDeclaringClass() == Object.class) {
                    continue;
                }
                Object v = invoke(g, o);
                if (g.getName().equals("getAdditionalProperties")) {
                    ((Map<?, ?>) v).keySet().forEach(k -> out.add(path + "." + k));
                } else {
                    unknownFields(v, path + "." + g.getName().substring(3), out);
                }
            }
        }
    }

    private static Object invoke(Method g, Object o) {
        try {
            return g.invoke(o);
        } catch (IllegalAccessException | InvocationTargetException e) {
            throw new AssertionError("cannot read " + g + ": " + e.getCause(), e);
        }
    }

    /** A kustomization.yaml as a tree, its keys limited to those these manifests use. */
    static JsonNode kustomization(Path dir) throws IOException {
        JsonNode k = YAML.readTree(dir.resolve("kustomization.yaml").toFile());
        k.fieldNames().forEachRemaining(f -> {
            if (!KUSTOMIZATION_KEYS.contains(f)) {
                throw new AssertionError(dir + "/kustomization.yaml: unexpected key " + f);
            }
        });
        return k;
    }

    /**
     * {@code kubectl} on the PATH, or null (it renders Kustomize overlays offline); with
     * {@code TENPLEX_REQUIRE_KUBECTL=1} (CI) its absence fails the test instead.
     */
    static Path kubectl() {
        for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(d, "kubectl");
            if (!d.isEmpty() && Files.isExecutable(p)) {
                return p;
            }
        }
        if ("1".equals(System.getenv("TENPLEX_REQUIRE_KUBECTL"))) {
            throw new AssertionError("TENPLEX_REQUIRE_KUBECTL=1 but no kubectl on the PATH (bin/lib/kubectl-env.sh)");
        }
        return null;
    }

    /**
     * The example overlay as {@code kubectl kustomize} renders it, from a copy of deploy/kubernetes
     * with a token file written into it (the checkout has none), parsed strictly.
     */
    static List<HasMetadata> render(KubernetesClient client, Path kubectl, Path scratch) throws Exception {
        return parse(client, new ByteArrayInputStream(kustomize(kubectl, scratch, "example")),
                "kubectl kustomize overlays/example");
    }

    /** What {@code kubectl kustomize overlays/<overlay>} renders, as trees (custom resources included). */
    static List<JsonNode> renderTrees(Path kubectl, Path scratch, String overlay) throws Exception {
        return trees(new ByteArrayInputStream(kustomize(kubectl, scratch, overlay)));
    }

    /** The texts of a JSON array. */
    static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(e -> out.add(e.asText()));
        return out;
    }

    /** Every document of a YAML stream as a tree. */
    static List<JsonNode> trees(InputStream yaml) throws IOException {
        List<JsonNode> out = new ArrayList<>();
        try (com.fasterxml.jackson.databind.MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(yaml)) {
            while (it.hasNext()) {
                JsonNode d = it.next();
                if (d != null && !d.isNull() && !d.isMissingNode()) {
                    out.add(d);
                }
            }
        }
        return out;
    }

    private static byte[] kustomize(Path kubectl, Path scratch, String overlay) throws Exception {
        if (!Files.exists(scratch.resolve("base"))) {
            try (Stream<Path> files = Files.walk(DIR)) {
                for (Path f : files.toList()) {
                    Path to = scratch.resolve(DIR.relativize(f).toString());
                    if (Files.isDirectory(f)) {
                        Files.createDirectories(to);
                    } else {
                        Files.copy(f, to);
                    }
                }
            }
            Files.writeString(scratch.resolve("overlays").resolve("example").resolve("token"), "a-test-token\n");
        }
        Path dir = scratch.resolve("overlays").resolve(overlay);
        Process p = new ProcessBuilder(kubectl.toString(), "kustomize", dir.toString()).redirectError(
                ProcessBuilder.Redirect.INHERIT).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (p.waitFor() != 0) {
            throw new AssertionError("kubectl kustomize " + dir + " failed (exit " + p.exitValue() + ")");
        }
        return out;
    }

    /** The text of every file under deploy/kubernetes, for searches. */
    static String allText() throws IOException {
        StringBuilder b = new StringBuilder();
        try (Stream<Path> files = Files.walk(DIR)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                b.append(Files.readString(f, StandardCharsets.UTF_8)).append('\n');
            }
        }
        return b.toString();
    }
}
