package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.server.jobs.JobRoutes;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A daemon with a small heap refuses, before anything starts, a change whose largest part it could not
 * build and send (central mode: the whole plan in one part), with the sizes; the same change peer to
 * peer is accepted, and the daemon keeps serving.
 */
class CoordinatorHeapIT {
    /** 24 layers at (2,4,8): about 40,000 pieces, 60 MiB and more in one central part; a 128 MiB heap allows 32. */
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(24, 256, 8, 1000, 16);
    private final Model model = MegatronLayout.model(GPT, 4);
    private final ProcessCluster cluster = new ProcessCluster(model);

    @AfterEach
    void stop() throws Exception {
        cluster.close();
    }

    private HttpResponse<byte[]> reconfigure(DaemonProcess d, String extra) throws Exception {
        StringBuilder daemons = new StringBuilder("{");
        for (int w = 0; w < 8; w++) {
            daemons.append(w > 0 ? "," : "").append('"').append(w).append("\": \"127.0.0.1:")
                    .append(d.address().getPort()).append('"');
        }
        String body = "{\"model\": " + ModelSpecJson.write(model) + ", \"from\": " + ProcessCluster.config(ParallelConfig
                .of(2, 4, 8), 8, 0) + ", \"to\": " + ProcessCluster.config(ParallelConfig.of(2, 2, 16), 8, 0)
                + ", \"daemons\": " + daemons + "}, \"source\": \"save\"" + extra + "}";
        return cluster.send(HttpRequest.newBuilder(URI.create(d.url() + JobRoutes.PREFIX + "j/reconfigure"))
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    @Test
    void aCentralPartOverAQuarterOfTheHeap_is413WithTheSizes_andNothingStarts() throws Exception {
        DaemonProcess d = DaemonProcess.start(List.of("-Xmx128m", "-XX:MaxDirectMemorySize=512m"), "--port", "0", "--memory-limit", "64m");
        cluster.daemons.add(d);
        HttpResponse<byte[]> r = reconfigure(d, ", \"central\": true");
        String text = new String(r.body(), StandardCharsets.UTF_8);
        assertEquals(413, r.statusCode(), text);
        assertTrue(text.contains("needs about "), text);
        assertTrue(text.contains("for its largest part (central worker 0: "), text);
        assertTrue(text.contains("nothing was started"), text);
        assertTrue(text.contains("Reconfigure peer to peer"), text);
        assertEquals("too_large", r.headers().firstValue("X-Tenplex-Error-Code").orElse(""));
        HttpResponse<byte[]> p2p = reconfigure(d, "");
        assertEquals(202, p2p.statusCode(), new String(p2p.body(), StandardCharsets.UTF_8));
    }
}
