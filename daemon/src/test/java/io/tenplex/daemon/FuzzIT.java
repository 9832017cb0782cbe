package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.server.RawHttp;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes a real daemon process over raw sockets with {@link HttpFuzzer}'s requests, from several
 * connections at once, some written slowly, on every route including the shared-memory, tiers,
 * streams and rehearsal routes of a job. It asserts that every connection gets an answer, that no
 * answer is a 5xx other than the documented refusals (507, out of memory budget; 503, the planning
 * pool's queue full), that every request with a job name that is not one (empty, dots, encoded
 * slashes, NUL, 300 characters; removal included) is a 4xx, that the store outside the fuzzer's scratch
 * paths is byte-identical afterwards (another job's tree among it) and that job's generations, load and
 * stop flag unchanged, and that once the scratch paths are removed the memory accounting is back at its
 * baseline.
 *
 * <p>A few thousand requests by default (well under two minutes); {@code -Dtenplex.fuzz.requests=N}
 * runs more and {@code -Dtenplex.fuzz.seed=S} replays a run (the seed is printed).
 */
class FuzzIT {
    private static final int REQUESTS = Integer.getInteger("tenplex.fuzz.requests", 3000);
    private static final int CLIENTS = 4;
    /** A job the fuzzer never names: it must come through unchanged (its tree, generations, stop flag). */
    private static final String KEPT = "kept";
    private static final Pattern USED = Pattern.compile("(?m)^tenplex_store_used_bytes (\\S+)$");
    /** 507: over the memory budget now; 503: the planning pool's queue is full (both documented, docs/API.md). */
    private static final java.util.Set<Integer> DOCUMENTED_5XX = java.util.Set.of(503, 507);
    private final HttpClient http = HttpClient.newHttpClient();
    private DaemonProcess daemon;

    @AfterEach
    void stop() throws Exception {
        if (daemon != null) {
            daemon.close();
        }
    }

    @Test
    void hostileRequestsOnEveryRoute_getAnswers_noServerErrors_andLeaveTheRestOfTheStoreAlone(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path shm) throws Exception {
        long seed = Long.getLong("tenplex.fuzz.seed", new Random().nextLong());
        System.out.println("FuzzIT: " + REQUESTS + " requests, seed " + seed + " (-Dtenplex.fuzz.seed=" + seed + ")");
        daemon = DaemonProcess.start("--port", "0", "--memory-limit", "256m", "--head-timeout", "2s",
                "--body-timeout", "2s", "--idle-timeout", "5s", "--shm-dir", shm.toString());
        byte[] w = new byte[1000 * 1000 * 4];
        new Random(seed).nextBytes(w);
        byte[] f = new byte[(1 << 20) + 1];
        new Random(seed + 1).nextBytes(f);
        put("/api/v1/tensors/keep/w?dtype=f32&dims=1000,1000", w);
        put("/api/v1/files/keep/f", f);
        byte[] k = keptJob(seed);
        String keptBefore = keptState();
        String before = listing();
        long baseline = usedBytes();
        // a model for the fuzzer's job, so that plans, resource changes and parallelizers get past "no model"
        put("/api/v1/files/job/" + HttpFuzzer.JOB + "/model.json", io.tenplex.ptc.ModelSpecJson.write(
                io.tenplex.ptc.MegatronLayout.model(io.tenplex.ptc.MegatronLayout.Shape.gpt(2, 16, 4, 100, 8)))
                .getBytes(StandardCharsets.UTF_8));

        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger answered = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                int client = c;
                done.add(pool.submit(() -> {
                    Random pace = new Random(seed + client);
                    HttpFuzzer fuzzer = new HttpFuzzer(seed + client); // each client its own sequence, made as it goes
                    for (int i = client; i < REQUESTS; i += CLIENTS) {
                        HttpFuzzer.Request request = fuzzer.next();
                        String problem = exchange(request, pace.nextInt(50) == 0 ? pace : null, answered);
                        if (problem != null) {
                            failures.add("client " + client + " #" + i + " " + request.summary() + ": " + problem);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> d : done) {
                d.get();
            }
        } finally {
            pool.shutdownNow();
        }
        System.out.println("FuzzIT: " + answered.get() + " answers, " + failures.size() + " failures");
        assertTrue(failures.isEmpty(), failures.size() + " failures (seed " + seed + "), first ones:\n"
                + String.join("\n", failures.subList(0, Math.min(20, failures.size()))));

        assertArrayEquals(w, get("/api/v1/tensors/keep/w"));
        assertArrayEquals(f, get("/api/v1/files/keep/f"));
        assertEquals(before, listing(), "the store outside the fuzzer's paths changed");
        assertEquals(keptBefore, keptState(), "job " + KEPT + " changed");
        assertArrayEquals(k, get("/api/v1/tensors/job/" + KEPT + "/generations/5/0/w"), "job " + KEPT + "'s generation");
        send("DELETE", "/api/v1/datasets/" + HttpFuzzer.JOB);
        releaseSharedMemory();
        send("DELETE", "/api/v1/jobs/" + HttpFuzzer.JOB + "/streams");
        send("DELETE", "/api/v1/jobs/" + HttpFuzzer.JOB + "/rehearsal");
        for (String own : List.of(HttpFuzzer.SCRATCH, "/job/" + HttpFuzzer.JOB)) { // a directory or a file
            send("DELETE", "/api/v1/dirs" + own + "?recursive=true");
            send("DELETE", "/api/v1/files" + own);
        }
        long end = System.nanoTime() + 30_000_000_000L;
        long used;
        while ((used = usedBytes()) != baseline) { // cut connections give their memory back on their own
            assertTrue(System.nanoTime() < end, "memory accounting at " + used + " bytes, baseline " + baseline);
            Thread.sleep(20); // polling the condition
        }
        String metrics = new String(get("/metrics"), StandardCharsets.UTF_8);
        assertTrue(metrics.length() < 200_000, "metrics grew to " + metrics.length() + " characters");
    }

    /** Sends one request (slowly when {@code pace} is given); null when it was answered well. */
    private String exchange(HttpFuzzer.Request r, Random pace, AtomicInteger answered) {
        try (RawHttp c = new RawHttp(daemon.address().getPort())) {
            try {
                write(c, r.bytes(), pace);
            } catch (IOException e) {
                // the server may answer and close before it has read everything (a refused head)
            }
            for (int k = 0; k < r.answers(); k++) {
                RawHttp.Response a = c.readOrNull(r.head());
                if (a == null) {
                    return k == 0 ? "connection closed without an answer" : null;
                }
                answered.incrementAndGet();
                if (a.status() >= 500 && !DOCUMENTED_5XX.contains(a.status()) || r.badName() && a.status() / 100 != 4) {
                    String text = a.text();
                    return "answer " + (k + 1) + ": " + a.status() + " " + text.substring(0, Math.min(200, text.length()));
                }
            }
            return null;
        } catch (SocketTimeoutException e) {
            return "no answer within 30 s";
        } catch (IOException e) {
            return e.toString();
        }
    }

    private static void write(RawHttp c, byte[] bytes, Random pace) throws IOException {
        if (pace == null) {
            c.write(bytes);
            return;
        }
        for (int pos = 0; pos < bytes.length; ) { // a slow client: a few pieces with pauses
            int n = Math.min(bytes.length - pos, 1 + pace.nextInt(Math.max(1, bytes.length / 3)));
            c.write(java.util.Arrays.copyOfRange(bytes, pos, pos + n));
            pos += n;
            try {
                Thread.sleep(pace.nextInt(300)); // the slowness under test, not synchronisation
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Another job than the fuzzer's: a complete generation (step 5) and a raised stop flag; its tensor's bytes. */
    private byte[] keptJob(long seed) throws Exception {
        byte[] k = new byte[64 << 10];
        new Random(seed + 2).nextBytes(k);
        put("/api/v1/tensors/job/" + KEPT + "/save/0/w?dtype=u8&dims=" + k.length, k);
        for (String[] call : List.of(new String[] {"/saves/5/ranks/0", "{\"world\": 1}"},
                new String[] {"/stop", "{\"reason\": \"kept\"}"})) {
            var r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + "/api/v1/jobs/" + KEPT + call[0]))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(call[1])).build(),
                    BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
        }
        return k;
    }

    /**
     * What the daemon says of job {@link #KEPT}: its generations, what rank 0 loads, its stop flag (without
     * its {@code asks}: the count of reads, this method's own among them; a read with a step sets its highest).
     */
    private String keptState() throws Exception {
        String flag = new String(get("/api/v1/jobs/" + KEPT + "/stop"), StandardCharsets.UTF_8);
        return new String(get("/api/v1/jobs/" + KEPT + "/generations"), StandardCharsets.UTF_8) + "\n"
                + new String(get("/api/v1/jobs/" + KEPT + "/load/0"), StandardCharsets.UTF_8) + "\n"
                + flag.replaceFirst(",\"asks\":\\{\"count\":\\d+,", ",\"asks\":{");
    }

    /** Ends every shared-memory reservation and pin the fuzzer left open (they hold budget until their lease). */
    private void releaseSharedMemory() throws Exception {
        var r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + "/api/v1/jobs/" + HttpFuzzer.JOB + "/shared"))
                .build(), BodyHandlers.ofByteArray());
        assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        for (var open : new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.body()).path("open")) {
            send("DELETE", "/api/v1/jobs/" + HttpFuzzer.JOB + "/shared/" + open.path("id").asText());
        }
    }

    private void put(String path, byte[] body) throws Exception {
        int status = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + path))
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body)).build(), BodyHandlers.discarding()).statusCode();
        assertEquals(201, status, path);
    }

    private byte[] get(String path) throws Exception {
        var r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + path)).build(), BodyHandlers.ofByteArray());
        assertEquals(200, r.statusCode(), path);
        return r.body();
    }

    private void send(String method, String path) throws Exception {
        http.send(HttpRequest.newBuilder(URI.create(daemon.url() + path)).method(method,
                HttpRequest.BodyPublishers.noBody()).build(), BodyHandlers.discarding());
    }

    /** Every entry of the store outside the fuzzer's paths, with its type and size. */
    private String listing() throws Exception {
        var all = new com.fasterxml.jackson.databind.ObjectMapper().readTree(get("/api/v1/dirs/?recursive=true"));
        StringBuilder b = new StringBuilder();
        for (var e : all.get("entries")) {
            String path = e.get("path").asText();
            if (!fuzzerOwns(path)) {
                b.append(e).append('\n');
            }
        }
        return b.toString();
    }

    /** The fuzzer's own paths: its scratch directory and its job, whatever entries they became. */
    private static boolean fuzzerOwns(String path) {
        for (String own : List.of(HttpFuzzer.SCRATCH, "/job/" + HttpFuzzer.JOB)) {
            if (path.equals(own) || path.startsWith(own + "/")) {
                return true;
            }
        }
        return false;
    }

    private long usedBytes() throws Exception {
        Matcher m = USED.matcher(new String(get("/metrics"), StandardCharsets.UTF_8));
        assertTrue(m.find());
        return (long) Double.parseDouble(m.group(1));
    }
}
