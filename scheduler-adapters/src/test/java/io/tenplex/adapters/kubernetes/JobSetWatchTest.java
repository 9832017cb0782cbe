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

/** What the adapter reads of a JobSet, from the example's JobSet in fabric8's mock API server (CRUD mode). */
@EnableKubernetesMockClient(crud = true)
class JobSetWatchTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    KubernetesClient client;

    @Test
    void aResize_theEnd_andTheDeletion_areSeen() throws Exception {
        JobSets.create(client, JobSets.example("training"));
        LinkedBlockingQueue<JobSetWatch.Seen> seen = new LinkedBlockingQueue<>();
        try (JobSetWatch w = JobSetWatch.start(client, "training", "gpt", "workers", seen::add)) {
            assertEquals(new JobSetWatch.Seen(2, null, false), next(seen));
            JobSets.resize(client, "training", "gpt", 4);
            assertEquals(new JobSetWatch.Seen(4, null, false), next(seen));
            JobSets.end(client, "training", "gpt", "Completed");
            assertEquals(new JobSetWatch.Seen(4, "Completed", false), next(seen));
            client.genericKubernetesResources(JobSetWatch.JOBSETS).inNamespace("training").withName("gpt").delete();
            assertEquals(JobSetWatch.Seen.GONE, next(seen));
        }
    }

    private static JobSetWatch.Seen next(LinkedBlockingQueue<JobSetWatch.Seen> q) throws InterruptedException {
        JobSetWatch.Seen s = q.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        if (s == null) {
            throw new AssertionError("nothing seen within " + WAIT);
        }
        return s;
    }

    @Test
    void whatAJobSetSays_withFieldsMissingOrOdd() {
        assertEquals(new JobSetWatch.Seen(6, null, false), of("{spec: {replicatedJobs: [{name: other, replicas: 9}, "
                + "{name: workers, replicas: 2, template: {spec: {parallelism: 3}}}]}}"));
        assertEquals(new JobSetWatch.Seen(1, null, false), of("{spec: {replicatedJobs: [{name: workers}]}}"));
        assertEquals(new JobSetWatch.Seen(-1, null, false), of("{spec: {replicatedJobs: [{name: launcher}]}}"));
        assertEquals(new JobSetWatch.Seen(-1, null, false), of("{spec: 5, status: {conditions: 7}}"));
        assertEquals(new JobSetWatch.Seen(0, null, false), of("{spec: {replicatedJobs: [{name: workers, replicas: -1}]}}"));
        assertEquals(new JobSetWatch.Seen(-1, "Failed", false), of("{status: {conditions: [{type: Failed, status: 'True'}, "
                + "{type: Completed, status: 'False'}]}}"));
        assertEquals(new JobSetWatch.Seen(-1, null, false), of("{status: {conditions: [{type: Completed, status: 'False'}]}}"));
    }

    @SuppressWarnings("unchecked")
    private static JobSetWatch.Seen of(String yaml) {
        GenericKubernetesResource js = new GenericKubernetesResource();
        try {
            new ObjectMapper(new YAMLFactory()).readValue(yaml, Map.class).forEach((k, v) ->
                    js.setAdditionalProperty((String) k, v));
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        return JobSetWatch.of(js, "workers");
    }
}
