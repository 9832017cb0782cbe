package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What the adapter reads of the owner of the job's pods, from the example's JobSet and elastic Job in fabric8's
 * mock API server (CRUD mode).
 */
@EnableKubernetesMockClient(crud = true)
class OwnerWatchTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    KubernetesClient client;

    @Test
    void aJobSetsResize_theEnd_andTheDeletion_areSeen() throws Exception {
        JobSets.create(client, JobSets.example("training"));
        LinkedBlockingQueue<OwnerWatch.Seen> seen = new LinkedBlockingQueue<>();
        try (OwnerWatch w = OwnerWatch.start(client, "training", OwnerWatch.Owner.jobSet("gpt", "workers"), seen::add)) {
            assertEquals(new OwnerWatch.Seen(2, null, false), next(seen));
            JobSets.resize(client, "training", "gpt", 4);
            assertEquals(new OwnerWatch.Seen(4, null, false), next(seen));
            JobSets.end(client, "training", "gpt", "Completed");
            assertEquals(new OwnerWatch.Seen(4, "Completed", false), next(seen));
            client.genericKubernetesResources(OwnerWatch.JOBSETS).inNamespace("training").withName("gpt").delete();
            assertEquals(OwnerWatch.Seen.GONE, next(seen));
        }
    }

    @Test
    void aJobsAbsence_creation_resize_theEnd_andTheDeletion_areSeen() throws Exception {
        LinkedBlockingQueue<OwnerWatch.Seen> seen = new LinkedBlockingQueue<>();
        try (OwnerWatch w = OwnerWatch.start(client, "training", OwnerWatch.Owner.job("gpt"), seen::add)) {
            assertEquals(OwnerWatch.Seen.ABSENT, next(seen), "listed and not there");
            io.fabric8.kubernetes.api.model.batch.v1.Job job = ElasticJobs.example(client, "training");
            job.getSpec().setSuspend(true); // as Kueue's webhook makes it
            ElasticJobs.create(client, job);
            assertEquals(new OwnerWatch.Seen(2, null, false, true), next(seen));
            client.batch().v1().jobs().inNamespace("training").withName("gpt").edit(j -> {
                j.getSpec().setSuspend(false); // admitted
                return j;
            });
            assertEquals(new OwnerWatch.Seen(2, null, false), next(seen));
            ElasticJobs.resize(client, "training", "gpt", 3);
            assertEquals(new OwnerWatch.Seen(3, null, false), next(seen));
            ElasticJobs.end(client, "training", "gpt", "Complete");
            assertEquals(new OwnerWatch.Seen(3, "Complete", false), next(seen));
            client.batch().v1().jobs().inNamespace("training").withName("gpt").delete();
            assertEquals(OwnerWatch.Seen.GONE, next(seen));
        }
    }

    @Test
    void whatAJobSays_withFieldsMissingOrOdd() {
        assertEquals(new OwnerWatch.Seen(3, null, false), ofJob("{spec: {parallelism: 3, completions: 8}}"));
        assertEquals(new OwnerWatch.Seen(2, null, false), ofJob("{spec: {parallelism: 3, completions: 2}}"),
                "no more pods at once than completions, as Kueue counts a Job's pods");
        assertEquals(new OwnerWatch.Seen(1, null, false), ofJob("{spec: {}}"));
        assertEquals(new OwnerWatch.Seen(0, null, false), ofJob("{spec: {parallelism: 0, completions: 4}}"));
        assertEquals(new OwnerWatch.Seen(0, null, false), ofJob("{spec: {parallelism: -7}}"));
        assertEquals(new OwnerWatch.Seen(1, null, false), ofJob("{spec: 5, status: {conditions: 7}}"));
        assertEquals(new OwnerWatch.Seen(1, null, false), ofJob("{status: {conditions: [{type: SuccessCriteriaMet, "
                + "status: 'True'}, {type: FailureTarget, status: 'True'}, {type: Completed, status: 'True'}]}}"),
                "only Complete and Failed end a Job");
        assertEquals(new OwnerWatch.Seen(1, "Failed", false), ofJob("{status: {conditions: [{type: Complete, "
                + "status: 'False'}, {type: Failed, status: 'True'}]}}"));
        assertEquals(new OwnerWatch.Seen(4, null, false, true), ofJob("{spec: {parallelism: 4, suspend: true}}"));
        assertEquals(new OwnerWatch.Seen(4, null, false, false), ofJob("{spec: {parallelism: 4, suspend: 'yes'}}"));
    }

    private static OwnerWatch.Seen next(LinkedBlockingQueue<OwnerWatch.Seen> q) throws InterruptedException {
        OwnerWatch.Seen s = q.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        if (s == null) {
            throw new AssertionError("nothing seen within " + WAIT);
        }
        return s;
    }

    @Test
    void whatAJobSetSays_withFieldsMissingOrOdd() {
        assertEquals(new OwnerWatch.Seen(6, null, false), of("{spec: {replicatedJobs: [{name: other, replicas: 9}, "
                + "{name: workers, replicas: 2, template: {spec: {parallelism: 3}}}]}}"));
        assertEquals(new OwnerWatch.Seen(1, null, false), of("{spec: {replicatedJobs: [{name: workers}]}}"));
        assertEquals(new OwnerWatch.Seen(-1, null, false), of("{spec: {replicatedJobs: [{name: launcher}]}}"));
        assertEquals(new OwnerWatch.Seen(-1, null, false), of("{spec: 5, status: {conditions: 7}}"));
        assertEquals(new OwnerWatch.Seen(0, null, false), of("{spec: {replicatedJobs: [{name: workers, replicas: -1}]}}"));
        assertEquals(new OwnerWatch.Seen(-1, "Failed", false), of("{status: {conditions: [{type: Failed, status: 'True'}, "
                + "{type: Completed, status: 'False'}]}}"));
        assertEquals(new OwnerWatch.Seen(-1, null, false), of("{status: {conditions: [{type: Completed, status: 'False'}]}}"));
    }

    private static OwnerWatch.Seen of(String yaml) {
        return OwnerWatch.ofJobSet(resource(yaml), "workers");
    }

    private static OwnerWatch.Seen ofJob(String yaml) {
        return OwnerWatch.ofJob(resource(yaml));
    }

    @SuppressWarnings("unchecked")
    private static GenericKubernetesResource resource(String yaml) {
        GenericKubernetesResource js = new GenericKubernetesResource();
        try {
            new ObjectMapper(new YAMLFactory()).readValue(yaml, Map.class).forEach((k, v) ->
                    js.setAdditionalProperty((String) k, v));
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        return js;
    }
}
