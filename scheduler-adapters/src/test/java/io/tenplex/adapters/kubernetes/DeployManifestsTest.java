package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The manifests under deploy/kubernetes (a Kustomize base and the example overlay): every file
 * parses strictly with fabric8's Kubernetes model ({@link Manifests}), fabric8's mock API server
 * accepts them, and they agree with what the daemon, the adapter and the launcher expect. Where
 * {@code kubectl} is installed the checks run on what {@code kubectl kustomize overlays/example}
 * renders (the token Secret generated, the values patch applied); elsewhere on the base's and the
 * overlay's resource files. (No real cluster exists here; this is as far as they can be checked.)
 */
@EnableKubernetesMockClient(crud = true)
class DeployManifestsTest {
    KubernetesClient client;
    @TempDir
    Path scratch;

    private final List<HasMetadata> all = new ArrayList<>();
    private boolean rendered;

    @BeforeEach
    void load() throws Exception {
        Path kubectl = Manifests.kubectl();
        if (kubectl != null) {
            all.addAll(Manifests.render(client, kubectl, scratch));
            rendered = true;
            System.out.println("DeployManifestsTest: checking what " + kubectl + " kustomize renders");
            return;
        }
        System.out.println("DeployManifestsTest: no kubectl on the PATH, checking the base's and overlay's files");
        for (Path dir : List.of(Manifests.BASE, Manifests.EXAMPLE)) {
            for (JsonNode r : Manifests.kustomization(dir).path("resources")) {
                Path f = dir.resolve(r.asText());
                if (!Files.isDirectory(f)) {
                    all.addAll(Manifests.parse(client, f));
                }
            }
        }
    }

    private <T extends HasMetadata> T one(Class<T> type, String name) {
        return all.stream().filter(type::isInstance).map(type::cast).filter(r -> r.getMetadata().getName().equals(name))
                .findFirst().orElseThrow(() -> new AssertionError("no " + type.getSimpleName() + " " + name));
    }

    private static String arg(Container c, String name) {
        return c.getArgs().stream().filter(a -> a.startsWith(name + "=")).map(a -> a.substring(name.length() + 1))
                .map(a -> a.replaceAll("\\s+#.*", "")).findFirst()
                .orElseThrow(() -> new AssertionError(c.getName() + " has no " + name + ": " + c.getArgs()));
    }

    private static EnvVar env(Container c, String name) {
        return c.getEnv().stream().filter(e -> e.getName().equals(name)).findFirst().orElse(null);
    }

    private static VolumeMount mount(Container c, String path) {
        return c.getVolumeMounts().stream().filter(m -> m.getMountPath().equals(path)).findFirst()
                .orElseThrow(() -> new AssertionError(c.getName() + " does not mount " + path));
    }

    private static Volume volume(PodSpec spec, String name) {
        return spec.getVolumes().stream().filter(v -> v.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no volume " + name));
    }

    private PodSpec daemonPod() {
        return one(DaemonSet.class, "tenplexd").getSpec().getTemplate().getSpec();
    }

    @Test
    void everyFile_parsesStrictly_andTheKustomizationsNameEveryManifest() throws Exception {
        List<Path> named = new ArrayList<>();
        List<Path> dirs;
        try (Stream<Path> files = Files.walk(Manifests.DIR)) {
            dirs = files.filter(f -> f.getFileName().toString().equals("kustomization.yaml")).map(Path::getParent)
                    .sorted().toList();
        }
        assertTrue(dirs.containsAll(List.of(Manifests.BASE, Manifests.EXAMPLE, Manifests.JOBSET, Manifests.KUEUE,
                Manifests.REST_ONLY)), dirs.toString());
        for (Path dir : dirs) {
            JsonNode k = Manifests.kustomization(dir);
            // the Kueue overlays add cluster-scoped queues, a component takes its overlay's: no namespace
            boolean none = dir.equals(Manifests.KUEUE) || Manifests.strings(k.path("resources")).contains("../kueue")
                    || dir.startsWith(Manifests.DIR.resolve("components"));
            assertEquals(none ? "" : "tenplex", k.path("namespace").asText(), dir.toString());
            k.path("resources").forEach(r -> named.add(dir.resolve(r.asText()).normalize()));
            k.path("patches").forEach(p -> {
                if (p.has("path")) {
                    named.add(dir.resolve(p.path("path").asText()).normalize());
                }
            });
        }
        try (Stream<Path> files = Files.walk(Manifests.DIR)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
                if (f.getFileName().toString().equals("kustomization.yaml")) {
                    continue;
                }
                assertTrue(named.contains(f.normalize()), f + " is in no kustomization.yaml");
                if (JobSetManifestsTest.holdsCustomResources(f)) { // checked against their published CRDs
                    assertTrue(JobSetManifestsTest.checkedAgainstCrds(f), f + " holds no resources");
                    continue;
                }
                assertFalse(Manifests.parse(client, f).isEmpty(), f + " holds no resources");
            }
        }
        for (Path n : named) {
            assertTrue(Files.exists(n), "a kustomization names " + n + ", which does not exist");
        }
    }

    @Test
    void strictParsing_rejectsAFieldTheModelDoesNotKnow() {
        String yaml = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  selectr: {a: b}\n";
        AssertionError e = org.junit.jupiter.api.Assertions.assertThrows(AssertionError.class, () -> Manifests.parse(
                client, new java.io.ByteArrayInputStream(yaml.getBytes(java.nio.charset.StandardCharsets.UTF_8)), "t"));
        assertTrue(e.getMessage().contains("selectr"), e.getMessage());
    }

    @Test
    void everyResource_isAcceptedByTheApiServer_inTheTenplexNamespace() {
        for (HasMetadata r : all) {
            if (!(r instanceof Namespace)) {
                assertEquals("tenplex", r.getMetadata().getNamespace(), r.getKind() + " " + r.getMetadata().getName());
            }
            client.resource(r).create();
        }
        assertNotNull(client.apps().daemonSets().inNamespace("tenplex").withName("tenplexd").get());
        assertNotNull(client.apps().statefulSets().inNamespace("tenplex").withName("gpt").get());
        assertNotNull(client.services().inNamespace("tenplex").withName("gpt").get());
        List<String> kinds = all.stream().map(HasMetadata::getKind).filter(k -> !k.equals("Secret")).sorted().toList();
        assertEquals(List.of("DaemonSet", "Deployment", "Namespace", "Role", "RoleBinding", "Service",
                "ServiceAccount", "StatefulSet"), kinds);
    }

    @Test
    void theToken_isGeneratedFromAFileOutsideGit_neverADefault() throws Exception {
        assertFalse(Manifests.allText().contains("change-me"));
        JsonNode gen = Manifests.kustomization(Manifests.EXAMPLE).path("secretGenerator").get(0);
        assertEquals("tenplex-token", gen.path("name").asText());
        assertEquals("token", gen.path("files").get(0).asText());
        assertTrue(gen.path("options").path("disableNameSuffixHash").asBoolean());
        assertTrue(Files.readString(Manifests.EXAMPLE.resolve(".gitignore")).lines().anyMatch("token"::equals));
        if (rendered) {
            Secret s = one(Secret.class, "tenplex-token");
            assertEquals("a-test-token\n", new String(java.util.Base64.getDecoder().decode(s.getData().get("token"))));
        } else {
            assertTrue(all.stream().noneMatch(Secret.class::isInstance), "no Secret with a value in the manifests");
        }
    }

    @Test
    void daemonSet_runsTenplexdOnTheHostNetwork_withTheFuseMountPropagatedToTheHost() {
        PodSpec spec = daemonPod();
        assertTrue(spec.getHostNetwork());
        Container d = spec.getContainers().get(0);
        String line = String.join(" ", d.getCommand());
        assertTrue(line.contains("exec java ") && line.contains("-jar /opt/tenplex/tenplexd.jar \"$@\""), line);
        assertEquals("0.0.0.0", arg(d, "--bind"));
        assertEquals("20010", arg(d, "--port"));
        assertTrue(d.getSecurityContext().getPrivileged(), "FUSE needs /dev/fuse and CAP_SYS_ADMIN");
        assertEquals("/dev/fuse", volume(spec, mount(d, "/dev/fuse").getName()).getHostPath().getPath());
        VolumeMount state = mount(d, "/var/lib/tenplex");
        assertEquals("Bidirectional", state.getMountPropagation());
        assertEquals("/var/lib/tenplex", volume(spec, state.getName()).getHostPath().getPath());
        assertTrue(arg(d, "--mount").startsWith("/var/lib/tenplex/"), "the FUSE mount is inside the propagated volume");
        assertEquals(20010, d.getPorts().get(0).getHostPort());
    }

    @Test
    void daemonSet_runsOnlyOnLabelledNodes_sizedByItsMemoryLimit() {
        PodSpec spec = daemonPod();
        assertEquals(Map.of("tenplex.io/worker", "true"), spec.getNodeSelector());
        Container d = spec.getContainers().get(0);
        Quantity request = d.getResources().getRequests().get("memory");
        Quantity limit = d.getResources().getLimits().get("memory");
        assertEquals(0, request.getNumericalAmount().compareTo(limit.getNumericalAmount()),
                "memory request = limit: a daemon within its size is among the last evicted");
        BigDecimal gib = new BigDecimal(1L << 30);
        assertTrue(limit.getNumericalAmount().compareTo(gib.multiply(BigDecimal.valueOf(8))) >= 0, "at least 8Gi");
        assertTrue(limit.getNumericalAmount().compareTo(gib.multiply(BigDecimal.valueOf(32))) <= 0,
                "a default that fits common nodes, not " + limit);
        EnvVar mib = env(d, "TENPLEX_MEMORY_MIB");
        assertEquals("limits.memory", mib.getValueFrom().getResourceFieldRef().getResource());
        assertEquals("1Mi", mib.getValueFrom().getResourceFieldRef().getDivisor().toString());
        String line = String.join(" ", d.getCommand());
        assertTrue(line.contains("-XX:MaxDirectMemorySize=$((TENPLEX_MEMORY_MIB * 75 / 100))m"), line);
        assertTrue(line.contains("-Xmx1g"), line);
        // the store's budget (a share of what the JVM sees as RAM: the limit) stays below direct memory
        assertEquals("65%", arg(d, "--memory-limit"));
    }

    @Test
    void daemonSet_probesNeverRestartADaemonThatAnswers_andItsCheckpointsSurviveARestart() {
        PodSpec spec = daemonPod();
        Container d = spec.getContainers().get(0);
        for (Probe p : List.of(d.getReadinessProbe(), d.getLivenessProbe(), d.getStartupProbe())) {
            assertEquals("/api/v1/health", p.getHttpGet().getPath());
            assertEquals(20010, p.getHttpGet().getPort().getIntVal());
        }
        Probe live = d.getLivenessProbe();
        assertTrue(live.getPeriodSeconds() * live.getFailureThreshold() >= 600, "10 minutes without an answer");
        assertTrue(live.getTimeoutSeconds() >= 10);
        Probe start = d.getStartupProbe();
        assertTrue(start.getPeriodSeconds() * start.getFailureThreshold() >= 1800, "time to restore from disk");
        assertTrue(arg(d, "--checkpoint-dir").startsWith("/var/lib/tenplex/"), "the durable tier is on the hostPath");
        assertEquals("OnDelete", one(DaemonSet.class, "tenplexd").getSpec().getUpdateStrategy().getType());
    }

    /** Every pod spec of every workload. */
    private List<PodSpec> pods() {
        List<PodSpec> out = new ArrayList<>();
        for (HasMetadata r : all) {
            if (r instanceof DaemonSet d) {
                out.add(d.getSpec().getTemplate().getSpec());
            } else if (r instanceof Deployment d) {
                out.add(d.getSpec().getTemplate().getSpec());
            } else if (r instanceof StatefulSet s) {
                out.add(s.getSpec().getTemplate().getSpec());
            }
        }
        return out;
    }

    @Test
    void noToken_isInAnyCommandLineOrVariable_onlyInTheSecretMountedAsAFile() {
        int containers = 0;
        for (PodSpec spec : pods()) {
            List<Container> cs = new ArrayList<>(spec.getContainers());
            cs.addAll(spec.getInitContainers());
            for (Container c : cs) {
                containers++;
                List<String> line = new ArrayList<>(c.getCommand() == null ? List.of() : c.getCommand());
                line.addAll(c.getArgs() == null ? List.of() : c.getArgs());
                for (String a : line) {
                    assertFalse(a.startsWith("--token=") || a.equals("--token") || a.contains("TENPLEX_TOKEN)"),
                            c.getName() + " has the token on its command line: " + a);
                }
                String file = line.stream().filter(a -> a.startsWith("--token-file=")).map(a -> arg(c, "--token-file"))
                        .findFirst().orElse(null);
                EnvVar fileVar = c.getEnv() == null ? null : env(c, "TENPLEX_TOKEN_FILE");
                assertNull(c.getEnv() == null ? null : env(c, "TENPLEX_TOKEN"), c.getName() + ": TENPLEX_TOKEN");
                file = file != null ? file : fileVar == null ? null : fileVar.getValue();
                if (file != null) {
                    tokenFileIsTheSecret(spec, c, file);
                }
            }
        }
        assertEquals(5, containers, "daemon, adapter and its init container, job and its init container");
    }

    private static void tokenFileIsTheSecret(PodSpec spec, Container c, String file) {
        String f = file;
        VolumeMount m = c.getVolumeMounts().stream().filter(v -> f.startsWith(v.getMountPath() + "/")).findFirst()
                .orElseThrow(() -> new AssertionError(c.getName() + ": the token file is on no volume: " + f));
        assertTrue(m.getReadOnly());
        io.fabric8.kubernetes.api.model.SecretVolumeSource secret = volume(spec, m.getName()).getSecret();
        assertEquals("tenplex-token", secret.getSecretName(), c.getName());
        assertEquals("token", f.substring(f.lastIndexOf('/') + 1), "the Secret's key");
        assertEquals(0400, secret.getDefaultMode(), "only the container's user may read the token");
    }

    @Test
    void adapter_readsOnlyPods_hasProbes_andWatchesExactlyTheExampleJobsPods() {
        Role role = one(Role.class, "tenplex-pod-reader");
        assertEquals(1, role.getRules().size());
        PolicyRule rule = role.getRules().get(0);
        assertEquals(List.of("pods"), rule.getResources());
        assertEquals(List.of("get", "list", "watch"), rule.getVerbs());
        RoleBinding binding = one(RoleBinding.class, "tenplex-adapter-reads-pods");
        assertEquals("tenplex-pod-reader", binding.getRoleRef().getName());
        assertEquals("tenplex-adapter", binding.getSubjects().get(0).getName());

        PodSpec adapterPod = one(Deployment.class, "tenplex-adapter-gpt").getSpec().getTemplate().getSpec();
        assertEquals("tenplex-adapter", adapterPod.getServiceAccountName());
        Container adapter = adapterPod.getContainers().get(0);
        assertEquals("kubernetes", adapter.getArgs().get(0));
        int health = Integer.parseInt(arg(adapter, "--health-port"));
        assertEquals(health, adapter.getPorts().stream().filter(p -> p.getName().equals("health")).findFirst()
                .orElseThrow().getContainerPort());
        assertEquals("/readyz", adapter.getReadinessProbe().getHttpGet().getPath());
        assertEquals("/healthz", adapter.getLivenessProbe().getHttpGet().getPath());
        assertEquals("health", adapter.getLivenessProbe().getHttpGet().getPort().getStrVal());
        assertEquals("health", adapter.getReadinessProbe().getHttpGet().getPort().getStrVal());
        Container daemon = daemonPod().getContainers().get(0);
        assertEquals(arg(daemon, "--port"), arg(adapter, "--daemon-port"));
        assertEquals("http://$(HOST_IP):20010", env(adapter, "TENPLEX_ADDR").getValue());
        assertEquals("status.hostIP", adapter.getEnv().get(0).getValueFrom().getFieldRef().getFieldPath());
        assertJobMatchesAdapter(adapter, daemon);
    }

    private void assertJobMatchesAdapter(Container adapter, Container daemon) {
        Map<String, String> selector = KubernetesAdapter.Settings.parseSelector(arg(adapter, "--selector"));
        StatefulSet job = one(StatefulSet.class, "gpt");
        assertEquals(arg(adapter, "--namespace"), job.getMetadata().getNamespace());
        Map<String, String> labels = job.getSpec().getTemplate().getMetadata().getLabels();
        assertTrue(labels.entrySet().containsAll(selector.entrySet()), "selector " + selector + " vs labels " + labels);
        Container train = job.getSpec().getTemplate().getSpec().getContainers().get(0);
        assertEquals(arg(adapter, "--job"), env(train, "TENPLEX_JOB").getValue());
        assertEquals(List.of("python3", "-m", "tenplex.launch", "--"), train.getCommand());
        assertEquals("HostToContainer", mount(train, "/var/lib/tenplex").getMountPropagation());
        int m = train.getArgs().indexOf("--mount");
        assertEquals(arg(daemon, "--mount"), train.getArgs().get(m + 1), "the ranks read the daemon's FUSE view");
        assertEquals("metadata.name", env(train, "POD_NAME").getValueFrom().getFieldRef().getFieldPath());
    }

    @Test
    void exampleJob_hasItsHeadlessService_runsWhereDaemonsRun_andAsksForNoGpuAsItTrainsOnTheCpu() {
        StatefulSet job = one(StatefulSet.class, "gpt");
        Service svc = one(Service.class, job.getSpec().getServiceName());
        assertEquals("None", svc.getSpec().getClusterIP(), "a StatefulSet's governing Service is headless");
        Map<String, String> labels = job.getSpec().getTemplate().getMetadata().getLabels();
        assertTrue(labels.entrySet().containsAll(svc.getSpec().getSelector().entrySet()));
        PodSpec spec = job.getSpec().getTemplate().getSpec();
        assertEquals(daemonPod().getNodeSelector(), spec.getNodeSelector(), "a training pod needs a daemon on its node");
        Container train = spec.getContainers().get(0);
        assertEquals("dist", svc.getSpec().getPorts().get(0).getTargetPort().getStrVal());
        assertEquals(svc.getSpec().getPorts().get(0).getPort(), train.getPorts().get(0).getContainerPort());
        for (Map<String, Quantity> r : List.of(train.getResources().getLimits(), train.getResources().getRequests())) {
            assertFalse(r.keySet().stream().anyMatch(k -> k.contains("gpu")), "the example trains on the CPU: " + r);
        }
        // a pod of the job, once scheduled, running and ready, is one worker with one device
        Pod pod = new PodBuilder().withMetadata(job.getSpec().getTemplate().getMetadata()).editMetadata().withName("gpt-0")
                .endMetadata().withSpec(spec).editSpec().withNodeName("node-1").endSpec().withNewStatus()
                .withPhase("Running").withHostIP("10.0.0.7").addNewCondition().withType("Ready").withStatus("True")
                .endCondition().endStatus().build();
        Container adapter = one(Deployment.class, "tenplex-adapter-gpt").getSpec().getTemplate().getSpec()
                .getContainers().get(0);
        assertEquals(Map.of("node-1", 1), PodMembership.of(List.of(pod), arg(adapter, "--gpu-resource")).shape());
    }
}
