package io.tenplex.adapters.kubernetes;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Follows the object whose pods are a tenplex job's: a JobSet ({@code jobset.x-k8s.io/v1alpha2},
 * kubernetes-sigs/jobset) and its replicated job, or a {@code batch/v1} Job (as Kueue resizes it through
 * workload slices). It reads how many worker pods the owner asks for (which a user, Kueue or a
 * controller changes to resize the job) and whether it has ended (a final condition that is
 * {@code True}). The pods themselves are still what the adapter counts; this is what it reports beside
 * them, and when it stops.
 */
final class OwnerWatch implements AutoCloseable {
    static final ResourceDefinitionContext JOBSETS = new ResourceDefinitionContext.Builder()
            .withGroup("jobset.x-k8s.io").withVersion("v1alpha2").withKind("JobSet").withPlural("jobsets")
            .withNamespaced(true).build();
    static final ResourceDefinitionContext JOBS = new ResourceDefinitionContext.Builder()
            .withGroup("batch").withVersion("v1").withKind("Job").withPlural("jobs").withNamespaced(true).build();
    /** The labels the JobSet controller puts on every pod of a replicated job. */
    static final String JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name";
    static final String REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name";
    /** The label the Job controller puts on every pod of a Job (Kubernetes 1.27 and later). */
    static final String JOB_LABEL = "batch.kubernetes.io/job-name";

    /**
     * What the owner says.
     *
     * @param wanted    worker pods it asks for, or -1 when it has no such replicated job
     * @param ended     the final condition it has reached ({@code Completed}, {@code Complete}, {@code Failed}), else null
     * @param gone      whether the owner does not exist (deleted, or not made yet)
     * @param suspended whether it is suspended ({@code spec.suspend}: Kueue holds it until it admits it,
     *     and suspends it again when it preempts it; its pods are deleted meanwhile)
     */
    record Seen(int wanted, String ended, boolean gone, boolean suspended) {
        /** The owner was deleted. */
        static final Seen GONE = new Seen(-1, null, true, false);
        /** The owner did not exist when the watch started (it may be made later). */
        static final Seen ABSENT = new Seen(-2, null, true, false);

        Seen(int wanted, String ended, boolean gone) {
            this(wanted, ended, gone, false);
        }
    }

    /**
     * An owner of the job's pods: its kind as events name it, its name, the part of it that runs the
     * pods (a replicated job; null for a Job), its API type, how its object is read, and the labels of its pods.
     */
    record Owner(String kind, String name, String part, ResourceDefinitionContext type,
            Function<GenericKubernetesResource, Seen> reader, Map<String, String> pods) {
        /** Replicated job {@code replicatedJob} of JobSet {@code name}. */
        static Owner jobSet(String name, String replicatedJob) {
            return new Owner("jobset", name, replicatedJob, JOBSETS, js -> ofJobSet(js, replicatedJob),
                    Map.of(JOBSET_LABEL, name, REPLICATED_JOB_LABEL, replicatedJob));
        }

        /** The {@code batch/v1} Job {@code name}. */
        static Owner job(String name) {
            return new Owner("job", name, null, JOBS, OwnerWatch::ofJob, Map.of(JOB_LABEL, name));
        }

        /** What {@code seen} asks for, in words. */
        String asksFor(Seen seen) {
            return seen.wanted() < 0 ? "no pods (it has no replicated job " + part + ")"
                    : seen.wanted() + " pods" + (part == null ? "" : " of " + part) + (seen.suspended()
                    ? ", but is suspended (Kueue has not admitted it, or has preempted it: its pods are deleted)" : "");
        }

        @Override
        public String toString() {
            return kind + " " + name;
        }
    }

    private final SharedIndexInformer<GenericKubernetesResource> informer;

    private OwnerWatch(SharedIndexInformer<GenericKubernetesResource> informer) {
        this.informer = informer;
    }

    /** Starts watching {@code owner} in {@code namespace}; {@code seen} is called on every change of it. */
    static OwnerWatch start(KubernetesClient client, String namespace, Owner owner, Consumer<Seen> seen) {
        ResourceEventHandler<GenericKubernetesResource> handler = new ResourceEventHandler<>() {
            @Override
            public void onAdd(GenericKubernetesResource o) {
                seen.accept(owner.reader().apply(o));
            }

            @Override
            public void onUpdate(GenericKubernetesResource before, GenericKubernetesResource after) {
                seen.accept(owner.reader().apply(after));
            }

            @Override
            public void onDelete(GenericKubernetesResource o, boolean unknownFinalState) {
                seen.accept(Seen.GONE);
            }
        };
        SharedIndexInformer<GenericKubernetesResource> informer = client.genericKubernetesResources(owner.type())
                .inNamespace(namespace).withName(owner.name()).inform(handler, 0);
        if (informer.getStore().list().isEmpty()) { // listed and not there: no event would say so
            seen.accept(Seen.ABSENT);
        }
        return new OwnerWatch(informer);
    }

    /** What a JobSet object says about replicated job {@code replicatedJob}; fields it lacks count as absent. */
    static Seen ofJobSet(GenericKubernetesResource js, String replicatedJob) {
        int wanted = -1;
        for (Object rj : list(map(js.getAdditionalProperties().get("spec")).get("replicatedJobs"))) {
            Map<?, ?> r = map(rj);
            if (replicatedJob.equals(r.get("name"))) {
                Map<?, ?> job = map(map(r.get("template")).get("spec"));
                wanted = clamp(number(r.get("replicas"), 1) * podsOf(job));
            }
        }
        return new Seen(wanted, ended(js, "Completed", "Failed"), false);
    }

    /**
     * What a {@code batch/v1} Job says: the pods it runs at once ({@code parallelism}, at most
     * {@code completions}, as Kueue counts a Job's pod set), whether it is {@code Complete} or {@code Failed},
     * and whether it is suspended.
     */
    static Seen ofJob(GenericKubernetesResource job) {
        Map<?, ?> spec = map(job.getAdditionalProperties().get("spec"));
        return new Seen(clamp(podsOf(spec)), ended(job, "Complete", "Failed"), false, Boolean.TRUE.equals(spec.get("suspend")));
    }

    /** A Job spec's pods at once: parallelism (default 1), at most its completions when set. */
    private static long podsOf(Map<?, ?> jobSpec) {
        long n = number(jobSpec.get("parallelism"), 1);
        return jobSpec.get("completions") instanceof Number c ? Math.min(n, c.longValue()) : n;
    }

    /** The first of {@code finals} that is a {@code True} condition of {@code o}, else null. */
    private static String ended(GenericKubernetesResource o, String... finals) {
        for (Object c : list(map(o.getAdditionalProperties().get("status")).get("conditions"))) {
            Map<?, ?> cond = map(c);
            if (List.of(finals).contains(cond.get("type")) && "True".equals(cond.get("status"))) {
                return (String) cond.get("type");
            }
        }
        return null;
    }

    private static int clamp(long n) {
        return (int) Math.min(Integer.MAX_VALUE, Math.max(0, n));
    }

    private static Map<?, ?> map(Object o) {
        return o instanceof Map<?, ?> m ? m : Map.of();
    }

    private static List<?> list(Object o) {
        return o instanceof List<?> l ? l : List.of();
    }

    private static long number(Object o, long absent) {
        return o instanceof Number n ? Math.max(Integer.MIN_VALUE, Math.min(n.longValue(), Integer.MAX_VALUE)) : absent;
    }

    /** True while the watch is open. */
    boolean watching() {
        return informer.isRunning() && informer.isWatching();
    }

    @Override
    public void close() {
        informer.close();
    }
}
