package io.tenplex.cli;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.tenplex.adapters.kubernetes.AdapterHealth;
import io.tenplex.adapters.kubernetes.KubernetesAdapter;
import io.tenplex.adapters.kubernetes.PodMembership;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tenplex kubernetes}: runs the Kubernetes adapter until stopped. It watches the job's pods
 * with the cluster credentials it finds (in-cluster service account, else {@code ~/.kube/config}) and
 * posts resource changes to the coordinating daemon ({@code --addr}).
 */
@Command(name = "kubernetes", description = "Watch a job's pods in Kubernetes and turn changes of ready pods and "
        + "GPUs into resource changes (runs until stopped, or with --jobset or --batch-job until that JobSet or Job has "
        + "ended).")
final class KubernetesCli implements Callable<Integer> {
    @CommandLine.Mixin
    TenplexCli.Target t;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--job", description = "Job name (default: TENPLEX_JOB).")
    String job = System.getenv("TENPLEX_JOB");

    @Option(names = "--namespace", description = "The job's namespace (default: the client configuration's, else 'default').")
    String namespace;

    @Option(names = "--selector", description = "Equality label selector of the job's pods (default: tenplex.io/job=<job>, "
            + "or with --jobset the pods of its replicated job, with --batch-job the pods of that Job).")
    String selector;

    @Option(names = "--jobset", paramLabel = "NAME", description = "Also follow the JobSet that runs the job's pods: "
            + "report the size it asks for, and end (exit 0) once it has completed, failed or been deleted (default: off).")
    String jobSet;

    @Option(names = "--batch-job", paramLabel = "NAME", description = "Instead, follow the batch/v1 Job that runs the "
            + "job's pods (an elastic Job that Kueue resizes): report the pods it runs at once, and end (exit 0) once it "
            + "is complete, has failed or been deleted (default: off).")
    String batchJob;

    @Option(names = "--replicated-job", defaultValue = "workers", paramLabel = "NAME",
            description = "With --jobset, its replicated job whose pods are the job's (default: ${DEFAULT-VALUE}).")
    String replicatedJob;

    @Option(names = "--daemon-port", defaultValue = "20010", description = "Port of the tenplexd on every node (default: ${DEFAULT-VALUE}).")
    int daemonPort;

    @Option(names = "--gpu-resource", defaultValue = PodMembership.DEFAULT_GPU_RESOURCE,
            description = "Extended resource counted as devices (default: ${DEFAULT-VALUE}).")
    String gpuResource;

    @Option(names = "--settle", defaultValue = "10", description = "Seconds the pods must be still before a change is acted on (default: ${DEFAULT-VALUE}).")
    long settleSeconds;

    @Option(names = "--save-timeout", defaultValue = "600", description = "Seconds to wait for every rank to save after a stop (default: ${DEFAULT-VALUE}).")
    long saveTimeout;

    @Option(names = "--health-port", paramLabel = "PORT", description = "Serve the probes /healthz (the process "
            + "answers) and /readyz (the pod watch is open) on this port of every interface (default: off).")
    Integer healthPort;

    @Override
    public Integer call() throws Exception {
        if (job == null || job.isBlank()) {
            throw new IllegalArgumentException("--job (or TENPLEX_JOB) is required");
        }
        io.tenplex.store.JobNamespace.requireValidName(job);
        Map<String, String> labels = podLabels();
        if (settleSeconds < 0 || saveTimeout < 1) {
            throw new IllegalArgumentException("--settle must be >= 0 and --save-timeout >= 1");
        }
        t.get("/api/v1/health"); // a clear error before anything else when the daemon is not there
        try (KubernetesClient client = new KubernetesClientBuilder().build()) {
            String ns = namespace != null ? namespace : client.getNamespace() != null ? client.getNamespace() : "default";
            KubernetesAdapter.Settings settings = new KubernetesAdapter.Settings(ns, labels, job, gpuResource,
                    daemonPort, t.addr, t.token(), Duration.ofSeconds(settleSeconds), Duration.ofSeconds(saveTimeout));
            CountDownLatch stopped = new CountDownLatch(1);
            try (KubernetesAdapter adapter = new KubernetesAdapter(client, settings,
                    new io.tenplex.server.jobs.HttpDaemonClient(t.link(), Duration.ofSeconds(30)))) {
                Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown, "tenplex-kubernetes-stop"));
                if (jobSet != null) {
                    adapter.followJobSet(jobSet, replicatedJob).onEnd(stopped::countDown);
                } else if (batchJob != null) {
                    adapter.followJob(batchJob).onEnd(stopped::countDown);
                }
                System.out.println("tenplex kubernetes: watching " + labels + " in namespace " + ns + " at "
                        + client.getMasterUrl() + "; resource changes go to " + t.addr);
                try (AutoCloseable probes = probes(adapter)) {
                    adapter.start();
                    stopped.await();
                    if (adapter.status().ended() != null) {
                        System.out.println("tenplex kubernetes: " + owner() + " " + adapter.status().ended()
                                + "; the job has ended");
                    }
                } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
                    throw new IllegalArgumentException("cannot watch pods" + (owner() == null ? "" : " or " + owner())
                            + " in namespace " + ns + " at " + client.getMasterUrl() + ": " + reason(e));
                }
            }
        }
        return 0;
    }

    /** The labels of the job's pods: --selector, else those of the followed owner's pods, else tenplex.io/job. */
    private Map<String, String> podLabels() {
        if (jobSet != null && batchJob != null) {
            throw new IllegalArgumentException("--jobset and --batch-job exclude each other: the job's pods have one owner");
        }
        if (jobSet != null) {
            dnsLabel("--jobset", jobSet);
            dnsLabel("--replicated-job", replicatedJob);
        }
        if (batchJob != null) {
            if (spec.commandLine().getParseResult().hasMatchedOption("--replicated-job")) {
                throw new IllegalArgumentException("--replicated-job is a JobSet's; --batch-job follows a Job (all its pods)");
            }
            if (batchJob.length() > 63 || !batchJob.matches("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")) {
                throw new IllegalArgumentException("--batch-job '" + batchJob + "' is not a valid Job name (at most 63 "
                        + "lower-case letters, digits, '-' and '.', each part starting and ending with a letter or digit)");
            }
        }
        return selector != null ? KubernetesAdapter.Settings.parseSelector(selector)
                : jobSet != null ? KubernetesAdapter.Settings.jobSetPods(jobSet, replicatedJob)
                : batchJob != null ? KubernetesAdapter.Settings.jobPods(batchJob)
                : KubernetesAdapter.Settings.parseSelector("tenplex.io/job=" + job);
    }

    /** The followed JobSet or Job, in words, or null. */
    private String owner() {
        return jobSet != null ? "jobset " + jobSet : batchJob != null ? "job " + batchJob : null;
    }

    /** A JobSet's, a replicated job's and a Job's names are DNS labels (they name its Jobs, pods and hosts). */
    private static void dnsLabel(String option, String name) {
        if (name.length() > 63 || !name.matches("[a-z0-9]([-a-z0-9]*[a-z0-9])?")) {
            throw new IllegalArgumentException(option + " '" + name + "' is not a valid name (a DNS label: at most 63 "
                    + "lower-case letters, digits and '-', starting and ending with a letter or digit)");
        }
    }

    /** The probe endpoints when {@code --health-port} is given, else nothing to close. */
    private AutoCloseable probes(KubernetesAdapter adapter) throws java.io.IOException {
        if (healthPort == null) {
            return () -> { };
        }
        if (healthPort < 0 || healthPort > 65535) {
            throw new IllegalArgumentException("--health-port must be 0..65535, not " + healthPort);
        }
        return AdapterHealth.start(new java.net.InetSocketAddress(healthPort), adapter::watching);
    }

    /** The innermost cause's message (or its type: a refused connection has no message). */
    static String reason(Throwable e) {
        String r = e.getMessage();
        for (Throwable c = e; c != null; c = c.getCause()) {
            r = c.getMessage() != null && !c.getMessage().isBlank() ? c.getMessage() : c.getClass().getSimpleName();
        }
        return r;
    }
}
