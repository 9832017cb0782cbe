package io.tenplex.adapters.kubernetes;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Follows the JobSet ({@code jobset.x-k8s.io/v1alpha2}, kubernetes-sigs/jobset) whose pods are a
 * tenplex job's: how many worker pods it asks for (its replicated job's {@code replicas x parallelism},
 * which a user, Kueue or a controller changes to resize the job) and whether it has ended (a
 * {@code Completed} or {@code Failed} condition that is {@code True}). The pods themselves are
 * still what the adapter counts; this is what it reports beside them, and when it stops.
 */
final class JobSetWatch implements AutoCloseable {
    static final ResourceDefinitionContext JOBSETS = new ResourceDefinitionContext.Builder()
            .withGroup("jobset.x-k8s.io").withVersion("v1alpha2").withKind("JobSet").withPlural("jobsets")
            .withNamespaced(true).build();
    /** The labels the JobSet controller puts on every pod of a replicated job. */
    static final String JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name";
    static final String REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name";

    /**
     * What the JobSet says.
     *
     * @param wanted worker pods it asks for, or -1 when it has no such replicated job
     * @param ended  {@code Completed} or {@code Failed} once it has ended, else null
     * @param gone   whether the JobSet does not exist (deleted, or not made yet)
     */
    record Seen(int wanted, String ended, boolean gone) {
        static final Seen GONE = new Seen(-1, null, true);
    }

    private final SharedIndexInformer<GenericKubernetesResource> informer;

    private JobSetWatch(SharedIndexInformer<GenericKubernetesResource> informer) {
        this.informer = informer;
    }

    /** The pods of replicated job {@code replicatedJob} of JobSet {@code name}, by the labels the JobSet controller sets. */
    static Map<String, String> podSelector(String name, String replicatedJob) {
        return Map.of(JOBSET_LABEL, name, REPLICATED_JOB_LABEL, replicatedJob);
    }

    /** Starts watching JobSet {@code name} in {@code namespace}; {@code seen} is called on every change of it. */
    static JobSetWatch start(KubernetesClient client, String namespace, String name, String replicatedJob,
            Consumer<Seen> seen) {
        ResourceEventHandler<GenericKubernetesResource> handler = new ResourceEventHandler<>() {
            @Override
            public void onAdd(GenericKubernetesResource js) {
                seen.accept(of(js, replicatedJob));
            }

            @Override
            public void onUpdate(GenericKubernetesResource before, GenericKubernetesResource after) {
                seen.accept(of(after, replicatedJob));
            }

            @Override
            public void onDelete(GenericKubernetesResource js, boolean unknownFinalState) {
                seen.accept(Seen.GONE);
            }
        };
        return new JobSetWatch(client.genericKubernetesResources(JOBSETS).inNamespace(namespace).withName(name)
                .inform(handler, 0));
    }

    /** What a JobSet object says about replicated job {@code replicatedJob}; fields it lacks count as absent. */
    static Seen of(GenericKubernetesResource js, String replicatedJob) {
        int wanted = -1;
        for (Object rj : list(map(js.getAdditionalProperties().get("spec")).get("replicatedJobs"))) {
            Map<?, ?> r = map(rj);
            if (replicatedJob.equals(r.get("name"))) {
                Map<?, ?> job = map(map(r.get("template")).get("spec"));
                long n = number(r.get("replicas"), 1) * number(job.get("parallelism"), 1);
                wanted = (int) Math.min(Integer.MAX_VALUE, Math.max(0, n));
            }
        }
        String ended = null;
        for (Object c : list(map(js.getAdditionalProperties().get("status")).get("conditions"))) {
            Map<?, ?> cond = map(c);
            Object type = cond.get("type");
            if (("Completed".equals(type) || "Failed".equals(type)) && "True".equals(cond.get("status"))) {
                ended = (String) type;
            }
        }
        return new Seen(wanted, ended, false);
    }

    private static Map<?, ?> map(Object o) {
        return o instanceof Map<?, ?> m ? m : Map.of();
    }

    private static List<?> list(Object o) {
        return o instanceof List<?> l ? l : List.of();
    }

    private static long number(Object o, long absent) {
        return o instanceof Number n ? Math.min(n.longValue(), Integer.MAX_VALUE) : absent;
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
