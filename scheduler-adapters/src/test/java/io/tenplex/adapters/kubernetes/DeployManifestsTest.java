package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The manifests under deploy/kubernetes: they parse, fabric8's Kubernetes mock API server (CRUD)
 * accepts them, and they agree with what the daemon, the adapter and the launcher expect. (No real
 * cluster exists here; this is as far as they can be checked.)
 */
@EnableKubernetesMockClient(crud = true)
class DeployManifestsTest {
    private static final Path DIR = Path.of("..", "deploy", "kubernetes");

    KubernetesClient client;
    private final List<HasMetadata> all = new ArrayList<>();

    @BeforeEach
    void load() throws Exception {
        try (Stream<Path> files = Files.list(DIR)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
                try (InputStream in = Files.newInputStream(f)) {
                    List<HasMetadata> items = client.load(in).items();
                    assertFalse(items.isEmpty(), f + " holds no resources");
                    all.addAll(items);
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
                .findFirst().orElseThrow(() -> new AssertionError(c.getName() + " has no " + name + ": " + c.getArgs()));
    }

    private static String env(Container c, String name) {
        return c.getEnv().stream().filter(e -> e.getName().equals(name)).map(EnvVar::getValue).findFirst().orElse(null);
    }

    private static VolumeMount mount(Container c, String path) {
        return c.getVolumeMounts().stream().filter(m -> m.getMountPath().equals(path)).findFirst()
                .orElseThrow(() -> new AssertionError(c.getName() + " does not mount " + path));
    }

    @Test
    void everyResource_isAcceptedByTheApiServer_inTheTenplexNamespace() {
        for (HasMetadata r : all) {
            if (r instanceof Namespace) {
                client.resource(r).create();
                continue;
            }
            assertEquals("tenplex", r.getMetadata().getNamespace(), r.getKind() + " " + r.getMetadata().getName());
            client.resource(r).create();
        }
        assertNotNull(client.apps().daemonSets().inNamespace("tenplex").withName("tenplexd").get());
        assertNotNull(client.apps().statefulSets().inNamespace("tenplex").withName("gpt").get());
        assertNotNull(client.rbac().roleBindings().inNamespace("tenplex").withName("tenplex-adapter-reads-pods").get());
        assertEquals(List.of("Namespace", "Secret", "DaemonSet", "ServiceAccount", "Role", "RoleBinding", "Deployment",
                "StatefulSet"), all.stream().map(HasMetadata::getKind).toList());
    }

    @Test
    void daemonSet_runsTenplexdOnTheHostNetwork_withTheFuseMountPropagatedToTheHost() {
        PodSpec spec = one(DaemonSet.class, "tenplexd").getSpec().getTemplate().getSpec();
        assertTrue(spec.getHostNetwork());
        Container d = spec.getContainers().get(0);
        assertTrue(String.join(" ", d.getCommand()).endsWith("-jar /opt/tenplex/tenplexd.jar"), d.getCommand().toString());
        assertEquals("0.0.0.0", arg(d, "--bind"));
        assertEquals("20010", arg(d, "--port"));
        String tokenFile = arg(d, "--token-file");
        VolumeMount tokenMount = d.getVolumeMounts().stream().filter(m -> tokenFile.startsWith(m.getMountPath() + "/"))
                .findFirst().orElseThrow(() -> new AssertionError("the token file is on no volume: " + tokenFile));
        assertTrue(tokenMount.getReadOnly());
        io.fabric8.kubernetes.api.model.SecretVolumeSource secret = spec.getVolumes().stream()
                .filter(v -> v.getName().equals(tokenMount.getName())).findFirst().orElseThrow().getSecret();
        assertEquals("tenplex-token", secret.getSecretName());
        assertEquals("token", tokenFile.substring(tokenFile.lastIndexOf('/') + 1), "the Secret's key");
        assertEquals(0400, secret.getDefaultMode(), "only the daemon's user may read the token");
        assertTrue(d.getSecurityContext().getPrivileged(), "FUSE needs /dev/fuse and CAP_SYS_ADMIN");
        assertEquals("/dev/fuse", spec.getVolumes().stream().filter(v -> v.getName().equals(mount(d, "/dev/fuse").getName()))
                .findFirst().orElseThrow().getHostPath().getPath());
        VolumeMount state = mount(d, "/var/lib/tenplex");
        assertEquals("Bidirectional", state.getMountPropagation());
        assertTrue(arg(d, "--mount").startsWith("/var/lib/tenplex/"), "the FUSE mount is inside the propagated volume");
        assertEquals("/api/v1/health", d.getReadinessProbe().getHttpGet().getPath());
        assertEquals(20010, d.getPorts().get(0).getHostPort());
    }

    /** Every container of every workload. */
    private List<Container> containers() {
        List<Container> out = new ArrayList<>();
        for (HasMetadata r : all) {
            PodSpec spec = r instanceof DaemonSet d ? d.getSpec().getTemplate().getSpec()
                    : r instanceof Deployment d ? d.getSpec().getTemplate().getSpec()
                    : r instanceof StatefulSet s ? s.getSpec().getTemplate().getSpec() : null;
            if (spec != null) {
                out.addAll(spec.getContainers());
                out.addAll(spec.getInitContainers());
            }
        }
        return out;
    }

    @Test
    void noToken_isInAnyCommandLine_onlyInSecretsMountedOrReferenced() {
        List<Container> all = containers();
        assertEquals(5, all.size(), "daemon, adapter and its init container, job and its init container");
        for (Container c : all) {
            List<String> line = new ArrayList<>();
            line.addAll(c.getCommand() == null ? List.of() : c.getCommand());
            line.addAll(c.getArgs() == null ? List.of() : c.getArgs());
            for (String a : line) {
                assertFalse(a.startsWith("--token=") || a.equals("--token") || a.contains("TENPLEX_TOKEN)")
                        || a.contains("change-me"), c.getName() + " has the token on its command line: " + a);
            }
            for (EnvVar e : c.getEnv() == null ? List.<EnvVar>of() : c.getEnv()) {
                if (e.getName().contains("TOKEN")) {
                    assertEquals(null, e.getValue(), c.getName() + ": " + e.getName() + " must come from the Secret");
                    assertEquals("tenplex-token", e.getValueFrom().getSecretKeyRef().getName());
                }
            }
        }
    }

    @Test
    void adapter_readsOnlyPods_andWatchesExactlyTheExampleJobsPods() {
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
        Map<String, String> selector = KubernetesAdapter.Settings.parseSelector(arg(adapter, "--selector"));
        Container daemon = one(DaemonSet.class, "tenplexd").getSpec().getTemplate().getSpec().getContainers().get(0);
        assertEquals(arg(daemon, "--port"), arg(adapter, "--daemon-port"));
        assertEquals("http://$(HOST_IP):20010", env(adapter, "TENPLEX_ADDR"));
        assertEquals("status.hostIP", adapter.getEnv().get(0).getValueFrom().getFieldRef().getFieldPath());

        StatefulSet job = one(StatefulSet.class, "gpt");
        assertEquals(arg(adapter, "--namespace"), job.getMetadata().getNamespace());
        Map<String, String> labels = job.getSpec().getTemplate().getMetadata().getLabels();
        assertTrue(labels.entrySet().containsAll(selector.entrySet()), "selector " + selector + " vs labels " + labels);
        Container train = job.getSpec().getTemplate().getSpec().getContainers().get(0);
        assertEquals(arg(adapter, "--job"), env(train, "TENPLEX_JOB"));
        assertEquals(List.of("python3", "-m", "tenplex.launch", "--"), train.getCommand());
        assertEquals("HostToContainer", mount(train, "/var/lib/tenplex").getMountPropagation());
        int m = train.getArgs().indexOf("--mount");
        assertEquals(arg(daemon, "--mount"), train.getArgs().get(m + 1), "the ranks read the daemon's FUSE view");
        assertEquals("metadata.name", train.getEnv().stream().filter(e -> e.getName().equals("POD_NAME")).findFirst()
                .orElseThrow().getValueFrom().getFieldRef().getFieldPath());

        // a pod of the job, once scheduled, running and ready, is one worker with its GPU
        Pod pod = new PodBuilder().withMetadata(job.getSpec().getTemplate().getMetadata()).editMetadata().withName("gpt-0")
                .endMetadata().withSpec(job.getSpec().getTemplate().getSpec()).editSpec().withNodeName("gpu-node-1")
                .endSpec().withNewStatus().withPhase("Running").withHostIP("10.0.0.7").addNewCondition().withType("Ready")
                .withStatus("True").endCondition().endStatus().build();
        PodMembership.Membership members = PodMembership.of(List.of(pod), arg(adapter, "--gpu-resource"));
        assertEquals(Map.of("gpu-node-1", 1), members.shape());
    }
}
