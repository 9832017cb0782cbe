package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.datasets.rehearsal.Sample;
import io.tenplex.datasets.rehearsal.Tuples;
import io.tenplex.jobs.common.JobLayout;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The rehearsal families of {@code /metrics}, scraped over HTTP from two daemons' REST servers:
 * representatives per class and in all, inserts and replacements, draws and their latency, bytes
 * fetched from the peer, and the augments the trainer reported.
 */
class RehearsalMetricsTest {
    private static final String CONFIG = "{\"classes\": 2, \"perClass\": 3, \"candidates\": 4, \"batch\": 4, \"seed\": 9}";
    /** The bytes of one sample's tuple: 1 part of 4 bytes, dtype |u1, 1-d. */
    private static final int TUPLE = 4 + 4 + 3 + 4 + 8 + 8 + 4;
    private final RehearsalServers servers = new RehearsalServers();
    private final List<String> bases = servers.bases;

    @AfterEach
    void close() throws Exception {
        servers.close();
    }

    private void start(int n) throws Exception {
        servers.start(n, 1 << 20);
    }

    private HttpResponse<byte[]> send(String method, String url, byte[] body) throws Exception {
        return servers.send(method, url, body);
    }

    private String rehearsal(int daemon) {
        return bases.get(daemon) + JobLayout.API_PREFIX + "j/rehearsal";
    }

    private static byte[] samples(int n) {
        List<Sample> s = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            s.add(Tuples.bytesSample(i % 2, new byte[] {(byte) i, 1, 2, 3}));
        }
        return Tuples.encode(s);
    }

    /** The value of the sample {@code name{labels}} in a scrape (labels as written, in order); fails if absent. */
    private static double value(String scrape, String name, String labels) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name + "{" + labels) + ",?\\} (\\S+)$").matcher(scrape);
        assertTrue(m.find(), name + "{" + labels + "} in\n" + scrape);
        return Double.parseDouble(m.group(1));
    }

    private String scrape(int daemon) throws Exception {
        HttpResponse<byte[]> r = send("GET", bases.get(daemon) + "/metrics", null);
        assertEquals(200, r.statusCode());
        return new String(r.body(), java.nio.charset.StandardCharsets.UTF_8);
    }

    @Test
    void rehearsalFamilies_countWhatTheBuffersDid_scrapedOverHttp() throws Exception {
        start(2);
        send("PUT", rehearsal(0), CONFIG.getBytes());
        send("PUT", rehearsal(1), CONFIG.getBytes());
        assertEquals(200, send("POST", rehearsal(1) + "/1/update", samples(8)).statusCode()); // 6 in, 2 replace
        assertEquals(200, send("POST", rehearsal(0) + "/0/update?waited=0", samples(2)).statusCode());
        HttpResponse<byte[]> drawn = send("POST", rehearsal(0) + "/0/update?draw=5&waited=2500", samples(1));
        assertEquals(5, Tuples.decode(drawn.body(), 5, 1 << 10).size());
        String peer = scrape(1);
        assertEquals(6, value(peer, "tenplex_rehearsal_inserts_total", "job=\"j\",rank=\"1\""));
        assertEquals(2, value(peer, "tenplex_rehearsal_replacements_total", "job=\"j\",rank=\"1\""));
        assertEquals(3, value(peer, "tenplex_rehearsal_class_representatives", "job=\"j\",rank=\"1\",class=\"0\""));
        assertEquals(6, value(peer, "tenplex_rehearsal_representatives", "job=\"j\",rank=\"1\""));
        assertEquals(6 * TUPLE, value(peer, "tenplex_rehearsal_bytes", "job=\"j\",rank=\"1\""));
        String here = scrape(0);
        String rank0 = "job=\"j\",rank=\"0\"";
        assertEquals(3, value(here, "tenplex_rehearsal_inserts_total", rank0));
        assertEquals(1, value(here, "tenplex_rehearsal_draws_total", rank0));
        assertEquals(5, value(here, "tenplex_rehearsal_drawn_total", rank0));
        assertEquals(1, value(here, "tenplex_rehearsal_draw_seconds_count", rank0));
        assertEquals(1, value(here, "tenplex_rehearsal_draw_seconds_bucket", rank0 + ",le=\"+Inf\""));
        double fetched = value(here, "tenplex_rehearsal_fetched_bytes_total", rank0 + ",purpose=\"draw\"");
        assertTrue(fetched >= 2 * TUPLE && fetched % TUPLE == 0, "5 of 9 drawn, 6 held by the peer: at least 2 fetched: "
                + fetched);
        assertEquals(2, value(here, "tenplex_rehearsal_augments_total", rank0));
        assertEquals(1, value(here, "tenplex_rehearsal_augment_waits_total", rank0));
        assertEquals(0.0025, value(here, "tenplex_rehearsal_augment_wait_seconds_total", rank0), 1e-9);
    }

    @Test
    void badWaited_isA400_andNothingIsInsertedOrCounted() throws Exception {
        start(1);
        send("PUT", rehearsal(0), CONFIG.getBytes());
        assertEquals(200, send("POST", rehearsal(0) + "/0/update", samples(1)).statusCode());
        for (String bad : List.of("-3", "x", "99999999999")) {
            HttpResponse<byte[]> r = send("POST", rehearsal(0) + "/0/update?waited=" + bad, samples(1));
            assertEquals(400, r.statusCode(), new String(r.body()));
            assertEquals("bad_request", r.headers().firstValue("X-Tenplex-Error-Code").orElse(""));
        }
        String after = scrape(0);
        assertEquals(1, value(after, "tenplex_rehearsal_inserts_total", "job=\"j\",rank=\"0\""));
        assertEquals(0, value(after, "tenplex_rehearsal_augments_total", "job=\"j\",rank=\"0\""));
    }
}
