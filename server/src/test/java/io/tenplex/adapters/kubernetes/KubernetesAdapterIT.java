package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.StopFlags;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.server.NettyLeaks;
import io.tenplex.server.RestServer;
import io.tenplex.server.jobs.JobsFixture;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.transform.ReferenceInterpreter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Kubernetes adapter against fabric8's Kubernetes mock API server in CRUD mode (pods are created,
 * updated and deleted through the real client; the informer lists and watches them) and two real
 * daemons, one per "node": node-a's at 127.0.0.1:P and node-b's at 127.0.0.2:P, the same port on
 * two host IPs as a DaemonSet on the host network would be. The mock API server is the only stand-in.
 */
@EnableKubernetesMockClient(crud = true)
class KubernetesAdapterIT {
    private static final String NS = "training";
    private static final Model MODEL = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16));
    private static final Duration WAIT = Duration.ofSeconds(60);

    KubernetesClient client;

    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private final List<TensorStore> stores = new ArrayList<>();
    private final List<RestServer> servers = new ArrayList<>();
    private final List<JobsFixture> services = new ArrayList<>();
    private final List<String> addresses = new ArrayList<>();
    private PeerClient peers;
    private KubernetesAdapter adapter;

    @BeforeEach
    void start() throws Exception {
        peers = new PeerClient(4, null);
        int port = 0;
        for (String host : List.of("127.0.0.1", "127.0.0.2")) {
            TensorStore store = new TensorStore(new Allocator(256L << 20));
            JobsFixture jobs = new JobsFixture(store, peers, Duration.ofSeconds(30), new StopFlags());
            RestServer s = new RestServer(store, null);
            s.addControl(JobsFixture.PREFIX, jobs);
            InetSocketAddress a = s.start(host, port);
            port = a.getPort();
            stores.add(store);
            servers.add(s);
            services.add(jobs);
            addresses.add(host + ":" + port);
        }
        Fixtures.putFile(stores.get(0), "/job/j/model.json", ModelSpecJson.write(MODEL).getBytes(StandardCharsets.UTF_8),
                false);
    }

    @AfterEach
    void stop() {
        if (adapter != null) {
            adapter.close();
        }
        servers.forEach(RestServer::close);
        services.forEach(JobsFixture::close);
        peers.close();
        stores.forEach(TensorStore::close);
    }

    @AfterAll
    static void noLeaks() {
        NettyLeaks.assertNone();
    }

    private KubernetesAdapter adapter(Duration settle) throws Exception {
        int port = Integer.parseInt(addresses.get(0).split(":")[1]);
        return new KubernetesAdapter(client, new KubernetesAdapter.Settings(NS, Map.of("tenplex.io/job", "j"), "j",
                PodMembership.DEFAULT_GPU_RESOURCE, port, addresses.get(0), null, settle, Duration.ofSeconds(60)),
                new io.tenplex.server.jobs.HttpDaemonClient(io.tenplex.server.peer.DaemonLink.plain(null),
                        Duration.ofSeconds(30))).start();
    }

    static Pod pod(String name, String node, String hostIp, int gpus, boolean ready) {
        return Pods.pod(name, node, hostIp, gpus, ready);
    }

    private void create(Pod p) {
        client.pods().inNamespace(NS).resource(p).create();
    }

    private void markReady(String name) {
        Pod p = client.pods().inNamespace(NS).withName(name).get();
        p.getStatus().setPhase("Running");
        p.getStatus().getConditions().get(0).setStatus("True");
        client.pods().inNamespace(NS).resource(p).updateStatus();
    }

    private JsonNode get(int daemon, String path) throws Exception {
        return json.readTree(http.send(HttpRequest.newBuilder(URI.create("http://" + addresses.get(daemon) + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body());
    }

    private Ptc ptc(ParallelConfig c, List<Device> devices) {
        return new Ptc(MODEL, c, RankLayout.MEGATRON, StageMap.uniform(MODEL.layers(), c.pp()), devices);
    }

    private static List<Device> devices(JsonNode list) {
        List<Device> out = new ArrayList<>();
        list.forEach(d -> out.add(new Device(d.get(0).asInt(), d.get(1).asInt())));
        return out;
    }

    /** What the job's ranks do when the stop flag is up: save their shards and seal the step on every daemon. */
    private Map<String, byte[]> trainAndSave(JsonNode assignment, long step, long seed) throws Exception {
        JsonNode c = assignment.get("config");
        Ptc ptc = ptc(ParallelConfig.of(c.get("tp").asInt(), c.get("pp").asInt(), c.get("dp").asInt()),
                devices(c.get("devices")));
        for (TensorStore s : stores) {
            if (s.stat(StorePath.parse("/job/j/save")).isPresent()) {
                s.delete(StorePath.parse("/job/j/save")); // training replaces its working copy
            }
        }
        Map<String, byte[]> full = SavedJobs.save(stores, new JobLayout("j"), ptc, seed);
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            for (io.tenplex.ptc.ValueSpec v : MODEL.values()) {
                Fixtures.putFile(stores.get(ptc.device(rank).worker()), "/job/j/save/" + rank + "/" + v.key(),
                        (v.key() + " of rank " + rank).getBytes(StandardCharsets.UTF_8), false);
            }
        }
        String daemons = "{\"0\": \"" + addresses.get(0) + "\", \"1\": \"" + addresses.get(1) + "\"}";
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            int worker = ptc.device(rank).worker();
            String body = "{\"world\": " + ptc.worldSize() + ", \"config\": " + c + ", \"daemons\": " + daemons + "}";
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + addresses.get(worker)
                    + JobsFixture.PREFIX + "j/saves/" + step + "/ranks/" + rank)).POST(HttpRequest.BodyPublishers
                    .ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
        }
        return full;
    }

    private byte[] read(int worker, String path) {
        return SavedJobs.bytes(stores.get(worker), path);
    }

    /** Every rank's shards in /job/j/load on its worker's daemon equal sharding the full tensors directly. */
    private void assertLoaded(JsonNode assignment, Map<String, byte[]> full) {
        JsonNode c = assignment.get("config");
        Ptc to = ptc(ParallelConfig.of(c.get("tp").asInt(), c.get("pp").asInt(), c.get("dp").asInt()),
                devices(c.get("devices")));
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), read(to.device(rank).worker(), "/job/j/load/" + rank + "/"
                        + e.getKey()), "rank " + rank + " " + e.getKey());
            }
        }
    }

    private KubernetesAdapter.Status awaitChanges(int n) throws InterruptedException {
        return adapter.await(s -> s.changes().size() >= n && s.running() == null, WAIT);
    }

    private int status(InetSocketAddress at, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + at.getPort() + path)).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Test
    void probes_readyWhileThePodWatchIsOpen_liveWhileTheProcessAnswers() throws Exception {
        KubernetesAdapter a = new KubernetesAdapter(client, new KubernetesAdapter.Settings(NS, Map.of("tenplex.io/job",
                "j"), "j", PodMembership.DEFAULT_GPU_RESOURCE, 20010, addresses.get(0), null, Duration.ZERO,
                Duration.ofSeconds(60)), new io.tenplex.server.jobs.HttpDaemonClient(
                io.tenplex.server.peer.DaemonLink.plain(null), Duration.ofSeconds(30)));
        try (AdapterHealth probes = AdapterHealth.start(new InetSocketAddress("127.0.0.1", 0), a::watching)) {
            assertEquals(503, status(probes.address(), "/readyz"), "not started: not watching");
            assertEquals(200, status(probes.address(), "/healthz"));
            adapter = a.start();
            assertEquals(200, status(probes.address(), "/readyz"));
            assertEquals(404, status(probes.address(), "/other"));
            a.close();
            assertEquals(503, status(probes.address(), "/readyz"), "closed: the watch is gone");
            assertEquals(200, status(probes.address(), "/healthz"));
        }
    }

    /**
     * A change that fails after the ranks saved for it (a new node's daemon does not answer): the daemon
     * keeps that save as the newest generation, and the adapter publishes the last assignment again for it,
     * so that the ranks (waiting for an assignment of that generation) continue instead of timing out.
     */
    @Test
    void aChangeThatFailsAfterTheSave_publishesTheLastAssignmentAgain_forTheSavedGeneration() throws Exception {
        create(pod("gpt-a0", "node-a", "127.0.0.1", 2, true));
        adapter = adapter(Duration.ofMillis(200));
        KubernetesAdapter.Status s = adapter.await(x -> x.assignment() != null, WAIT);
        JsonNode first = s.assignment();
        trainAndSave(first, 10, 1);

        create(pod("gpt-c0", "node-c", "127.0.0.9", 2, true)); // nothing listens there
        adapter.await(x -> x.running() != null, WAIT);
        trainAndSave(first, 20, 2);
        s = awaitChanges(1);
        KubernetesAdapter.Change failed = s.changes().get(0);
        assertEquals("failed", failed.state(), s.toString());
        JsonNode again = s.assignment();
        assertEquals(20, again.path("generation").asLong(), again.toString());
        assertEquals(failed.id(), again.path("change").asText());
        for (String field : List.of("config", "pods", "workers", "masterAddr", "worldSize")) {
            assertEquals(first.get(field), again.get(field), field);
        }
        assertEquals(again, get(0, "/api/v1/files/job/j/kubernetes/assignment.json"), "published on the coordinator");
        assertEquals(20, get(0, "/api/v1/jobs/j/generations").path("current").asLong(), "the save is the newest generation");
        assertFalse(get(0, "/api/v1/jobs/j/stop").path("stop").asBoolean(), "flag cleared for the ranks");
        assertTrue(s.events().stream().anyMatch(e -> e.contains("the ranks saved generation 20 for change " + failed.id()
                + ": the last assignment published again for it")), s.events().toString());
    }

    /**
     * Following the job's JobSet (the example's, as JobSet v0.12 defines it): the size it asks for is
     * reported, and once it has completed the adapter acts on no more changes (a pod turning ready late
     * is not a resize) and runs what was to run at the end.
     */
    @Test
    void followingAJobSet_reportsItsSize_andEndsWithIt() throws Exception {
        JobSets.create(client, JobSets.example(NS));
        create(pod("gpt-workers-0-0", "node-a", "127.0.0.1", 2, true));
        int port = Integer.parseInt(addresses.get(0).split(":")[1]);
        java.util.concurrent.CountDownLatch ended = new java.util.concurrent.CountDownLatch(1);
        adapter = new KubernetesAdapter(client, new KubernetesAdapter.Settings(NS, Map.of("tenplex.io/job", "j"), "j",
                PodMembership.DEFAULT_GPU_RESOURCE, port, addresses.get(0), null, Duration.ofMillis(200),
                Duration.ofSeconds(60)), new io.tenplex.server.jobs.HttpDaemonClient(
                        io.tenplex.server.peer.DaemonLink.plain(null), Duration.ofSeconds(30))).followJobSet("gpt", "workers");
        adapter.onEnd(ended::countDown);
        adapter.start();
        KubernetesAdapter.Status s = adapter.await(x -> x.assignment() != null && x.events().stream().anyMatch(e ->
                e.contains("jobset gpt asks for 2 pods of workers")), WAIT);
        assertEquals(Map.of("node-a", 2), s.applied());
        assertTrue(adapter.watching(), "the pods and the JobSet are watched");

        JobSets.resize(client, NS, "gpt", 3);
        adapter.await(x -> x.events().stream().anyMatch(e -> e.contains("jobset gpt asks for 3 pods of workers")), WAIT);

        JobSets.end(client, NS, "gpt", "Completed");
        assertTrue(ended.await(WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS), "the end was run");
        create(pod("gpt-workers-0-1", "node-b", "127.0.0.2", 2, true)); // late: would be a change while running
        s = adapter.await(x -> x.settled() && x.observed() != null && x.observed().contains("node-b"), WAIT);
        assertEquals("Completed", s.ended());
        assertTrue(s.events().stream().anyMatch(e -> e.contains("jobset gpt Completed: the job has ended")), s.events()
                .toString());
        assertTrue(s.changes().isEmpty() && s.running() == null, s.toString());
        assertEquals(Map.of("node-a", 2), s.applied());
        client.genericKubernetesResources(OwnerWatch.JOBSETS).inNamespace(NS).withName("gpt").delete();
        s = adapter.await(x -> x.events().stream().anyMatch(e -> e.contains("jobset gpt not found")), WAIT);
        assertEquals("Completed", s.ended(), "the end stays what it was");
    }

    /**
     * Kueue resizing the example's elastic Job through a workload slice: the larger parallelism is reported,
     * the new index's pod held by Kueue's scheduling gate is reported and not counted (no stop, no change),
     * and once Kueue admits the slice (the gate removed, the pod scheduled and ready) the resize reaches the
     * job as one resource change that moves the saved state onto both nodes. The Job's completion ends it.
     */
    @Test
    void aKueueResize_reachesTheJob_onceKueueAdmitsItsSlice() throws Exception {
        create(jobPod("gpt-0", "node-a", "127.0.0.1", true));
        int port = Integer.parseInt(addresses.get(0).split(":")[1]);
        java.util.concurrent.CountDownLatch ended = new java.util.concurrent.CountDownLatch(1);
        adapter = new KubernetesAdapter(client, new KubernetesAdapter.Settings(NS, KubernetesAdapter.Settings.jobPods("gpt"),
                "j", PodMembership.DEFAULT_GPU_RESOURCE, port, addresses.get(0), null, Duration.ofMillis(200),
                Duration.ofSeconds(60)), new io.tenplex.server.jobs.HttpDaemonClient(
                        io.tenplex.server.peer.DaemonLink.plain(null), Duration.ofSeconds(30))).followJob("gpt");
        adapter.onEnd(ended::countDown);
        adapter.start(); // before the Job is made: it says so, and waits
        adapter.await(x -> x.events().stream().anyMatch(e -> e.endsWith("job gpt not found (not made yet, or deleted "
                + "before this adapter started: then delete this adapter too)")), WAIT);
        io.fabric8.kubernetes.api.model.batch.v1.Job job = ElasticJobs.example(client, NS);
        job.getSpec().setParallelism(1);
        job.getSpec().setCompletions(1);
        job.getSpec().setSuspend(true); // as Kueue's webhook makes it, until Kueue admits it
        ElasticJobs.create(client, job);
        adapter.await(x -> x.events().stream().anyMatch(e -> e.endsWith("job gpt asks for 1 pods, but is suspended "
                + "(Kueue has not admitted it, or has preempted it: its pods are deleted)")), WAIT);
        client.batch().v1().jobs().inNamespace(NS).withName("gpt").edit(j -> {
            j.getSpec().setSuspend(false);
            return j;
        });
        KubernetesAdapter.Status s = adapter.await(x -> x.assignment() != null && x.events().stream().anyMatch(e ->
                e.endsWith("job gpt asks for 1 pods")), WAIT);
        assertNull(s.ended(), "a Job not made yet is no end");
        JsonNode a = s.assignment();
        assertEquals(Map.of("node-a", 2), s.applied());
        trainAndSave(a, 10, 1);

        ElasticJobs.resize(client, NS, "gpt", 2); // Kueue makes a slice of 2 pods; the Job makes gpt-1, gated
        Pod gated = jobPod("gpt-1", null, null, false);
        gated.getSpec().getSchedulingGates().add(ElasticJobs.kueueGate());
        create(gated);
        s = adapter.await(x -> x.settled() && x.events().stream().anyMatch(e -> e.endsWith("job gpt asks for 2 pods"))
                && x.events().stream().anyMatch(e -> e.contains("gpt-1=not scheduled until its scheduling gates "
                + "[kueue.x-k8s.io/elastic-job] are removed (Kueue has not admitted their workload slice yet)")), WAIT);
        assertTrue(s.changes().isEmpty() && s.running() == null, s.toString());
        assertFalse(get(0, "/api/v1/jobs/j/stop").path("stop").asBoolean(), "no stop while Kueue holds the pod");

        client.pods().inNamespace(NS).withName("gpt-1").edit(p -> { // Kueue admits: the gate goes, it is bound to node-b
            p.getSpec().getSchedulingGates().clear();
            p.getSpec().setNodeName("node-b");
            return p;
        });
        Pod admitted = client.pods().inNamespace(NS).withName("gpt-1").get();
        admitted.getStatus().setHostIP("127.0.0.2");
        admitted.getStatus().setPodIP("10.244.2.10");
        client.pods().inNamespace(NS).resource(admitted).updateStatus();
        markReady("gpt-1");
        adapter.await(x -> x.running() != null, WAIT);
        Map<String, byte[]> full = trainAndSave(a, 20, 2);
        s = awaitChanges(1);
        assertEquals("done", s.changes().get(0).state(), s.toString());
        a = s.assignment();
        assertEquals(json.readTree("{\"tp\":1,\"pp\":1,\"dp\":4,\"devices\":[[0,0],[0,1],[1,0],[1,1]]}"), a.get("config"));
        assertLoaded(a, full);

        ElasticJobs.end(client, NS, "gpt", "Complete");
        assertTrue(ended.await(WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS), "the end was run");
        assertEquals("Complete", adapter.status().ended());
    }

    /** A pod of the elastic Job {@code gpt} with two GPUs, labelled as the Job controller labels it. */
    private static Pod jobPod(String name, String node, String hostIp, boolean ready) {
        Pod p = pod(name, node, hostIp, 2, ready);
        p.getMetadata().getLabels().put(OwnerWatch.JOB_LABEL, "gpt");
        return p;
    }

    /** A pod that succeeded saw the job end (a Job's pod being deleted exits 143): the others' going is no resize. */
    @Test
    void aPodThatSucceeded_endsTheChanges() throws Exception {
        create(pod("gpt-a0", "node-a", "127.0.0.1", 2, true));
        create(pod("gpt-a1", "node-a", "127.0.0.1", 2, true));
        adapter = adapter(Duration.ofMillis(200));
        adapter.await(x -> x.assignment() != null, WAIT);
        Pod done = client.pods().inNamespace(NS).withName("gpt-a0").get();
        done.getStatus().setPhase("Succeeded");
        client.pods().inNamespace(NS).resource(done).updateStatus();
        KubernetesAdapter.Status s = adapter.await(x -> x.events().stream().anyMatch(e -> e.contains(
                "pod gpt-a0 succeeded: the job is ending; no more changes")), WAIT);
        create(pod("gpt-b0", "node-b", "127.0.0.2", 2, true)); // would be a change while the job runs
        s = adapter.await(x -> x.settled() && x.observed() != null && x.observed().contains("node-b"), WAIT);
        assertTrue(s.changes().isEmpty() && s.running() == null, s.toString());
        assertEquals(Map.of("node-a", 4), s.applied());
        assertNull(s.ended(), "no JobSet followed");
    }

    @Test
    void readyPodsAndTheirGpus_becomeResourceChanges_thatMoveTheStateBetweenNodes() throws Exception {
        create(pod("gpt-a0", "node-a", "127.0.0.1", 2, true));
        create(pod("gpt-b0", "node-b", "127.0.0.2", 2, false));
        adapter = adapter(Duration.ofMillis(200));

        // first observation: node-a's two GPUs; node-b's pod is not ready yet
        KubernetesAdapter.Status s = adapter.await(x -> x.assignment() != null, WAIT);
        JsonNode a = s.assignment();
        assertEquals(Map.of("node-a", 2), s.applied());
        assertEquals(json.readTree("{\"tp\":1,\"pp\":1,\"dp\":2,\"devices\":[[0,0],[0,1]]}"), a.get("config"), a.toString());
        assertEquals("10.244.1.10", a.path("masterAddr").asText(), "rank 0's pod");
        assertEquals(json.readTree("[{\"pod\":\"gpt-a0\",\"node\":\"node-a\",\"worker\":0,\"local\":[0,1],\"ranks\":[0,1]}]"),
                a.get("pods"));
        assertTrue(s.observed().contains("2 devices"), s.observed());
        assertTrue(s.events().stream().anyMatch(e -> e.contains("gpt-b0=phase Pending")), s.events().toString());
        assertEquals(a, get(0, "/api/v1/files/job/j/kubernetes/assignment.json"), "published on the coordinator");
        assertTrue(s.changes().isEmpty());
        trainAndSave(a, 10, 1);

        // scale up: node-b's pod becomes ready -> stop flag, save, reconfigure to (1,1,4) over both nodes
        markReady("gpt-b0");
        adapter.await(x -> x.running() != null, WAIT);
        assertTrue(get(0, "/api/v1/jobs/j/stop").path("stop").asBoolean(), "the ranks are told to stop");
        Map<String, byte[]> full = trainAndSave(a, 20, 2);
        s = awaitChanges(1);
        assertEquals("done", s.changes().get(0).state(), s.toString());
        a = s.assignment();
        assertEquals(json.readTree("{\"tp\":1,\"pp\":1,\"dp\":4,\"devices\":[[0,0],[0,1],[1,0],[1,1]]}"), a.get("config"));
        assertEquals(20, a.path("generation").asLong());
        assertEquals("gpt-b0", a.at("/pods/1/pod").asText());
        assertEquals(json.readTree("[2,3]"), a.at("/pods/1/ranks"));
        assertEquals(addresses.get(1), a.at("/workers/1/address").asText());
        assertLoaded(a, full);
        assertFalse(get(0, "/api/v1/jobs/j/stop").path("stop").asBoolean(), "flag cleared for the relaunched ranks");
        JsonNode nodeB = get(1, "/api/v1/jobs/j/stop");
        assertEquals(1, nodeB.path("raises").asInt(), "node-b's ranks ask node-b's daemon: raised there too");
        assertFalse(nodeB.path("raised").asBoolean(), "and cleared");

        // a pod whose device annotation is wrong is reported and counted as nothing: no change
        Pod bad = pod("gpt-c0", "node-c", "127.0.0.3", 1, true);
        bad.getMetadata().setAnnotations(Map.of(PodMembership.DEVICES_ANNOTATION, "two"));
        create(bad);
        s = adapter.await(x -> x.settled() && x.events().stream().anyMatch(e -> e.contains(
                "gpt-c0=annotation tenplex.io/devices='two' is not a positive integer")), WAIT);
        assertEquals(1, s.changes().size());
        assertNull(s.running());

        // node-a's pod goes away: the state moves to node-b alone, read from node-a's daemon (still running)
        client.pods().inNamespace(NS).withName("gpt-a0").delete();
        adapter.await(x -> x.running() != null, WAIT);
        full = trainAndSave(a, 30, 3);
        s = awaitChanges(2);
        assertEquals("done", s.changes().get(1).state(), s.toString());
        a = s.assignment();
        assertEquals(json.readTree("{\"tp\":1,\"pp\":1,\"dp\":2,\"devices\":[[1,0],[1,1]]}"), a.get("config"));
        assertEquals("10.244.2.10", a.path("masterAddr").asText());
        assertEquals(json.readTree("[{\"pod\":\"gpt-b0\",\"node\":\"node-b\",\"worker\":1,\"local\":[0,1],\"ranks\":[0,1]}]"),
                a.get("pods"));
        assertEquals(0, a.at("/workers/0/devices").asInt(), "node-a keeps its number, with no devices");
        assertLoaded(a, full);

        // a restarted adapter picks up what was applied and keeps the worker numbers: nothing to change
        adapter.close();
        adapter = adapter(Duration.ofMillis(200));
        s = adapter.await(x -> x.evaluations() > 0 && x.settled(), WAIT);
        assertEquals(Map.of("node-b", 2), s.applied());
        assertTrue(s.changes().isEmpty());
        assertNull(s.running());
    }
}
