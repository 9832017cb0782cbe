package io.tenplex.cli;

import io.tenplex.daemon.DaemonProcess;
import io.tenplex.daemon.ProcessCluster;

import io.tenplex.daemon.Tenplexd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.server.peer.RecordingRelay;
import io.tenplex.server.peer.TestCerts;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real tenplexd processes with TLS and tokens from files and the environment: a reconfiguration
 * between two TLS daemons, observed on the wire; plain HTTP refused; the CLI and the Python client
 * over https; clear start-up errors (exit 2) for bad TLS and token files.
 */
class TlsAndTokenIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final String TOKEN = "tok-7c2e9b41";
    private static final Model MODEL = MegatronLayout.model(MegatronLayout.Shape.gpt(2, 64, 8, 1000, 16), 2);
    @TempDir
    static Path dir;
    private static TestCerts certs;
    private static Path tokenFile;
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeAll
    static void files() throws Exception {
        certs = TestCerts.create(dir, "daemon");
        tokenFile = secret("token", TOKEN + "\n");
    }

    private static Path secret(String name, String content) throws IOException {
        Path f = Files.writeString(dir.resolve(name), content);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        return f;
    }

    private String[] tlsArgs(String... more) {
        List<String> a = new ArrayList<>(List.of("--tls-cert", certs.cert.toString(), "--tls-key", certs.key.toString(),
                "--tls-ca", certs.ca().toString(), "--token-file", tokenFile.toString()));
        a.addAll(List.of(more));
        return a.toArray(String[]::new);
    }

    private <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private DaemonProcess daemon(Map<String, String> env, String... args) throws IOException {
        List<String> a = new ArrayList<>(List.of("--port", "0", "--memory-limit", "64m"));
        a.addAll(List.of(args));
        return keep(DaemonProcess.start(env, a.toArray(String[]::new)));
    }

    private static int status(DaemonLink link, String url) throws Exception {
        return link.http().send(link.authorize(HttpRequest.newBuilder(URI.create(url))).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Test
    void reconfigurationBetweenTlsDaemons_isByteExact_andTheWireShowsNoTokenAndNoHttp() throws Exception {
        DaemonLink link = DaemonLink.tls(certs.ca(), TOKEN);
        ProcessCluster cluster = keep(new ProcessCluster(MODEL, link, tlsArgs()));
        DaemonProcess d0 = cluster.start();
        cluster.start();
        assertTrue(d0.url().startsWith("https://"), d0.url());
        ParallelConfig from = ParallelConfig.of(2, 1, 1);
        ParallelConfig to = ParallelConfig.of(1, 2, 1);
        // what Megatron saves under P = 1: no tied head (the target's last stage gets it from the embeddings)
        Map<String, byte[]> full = cluster.save("tls", Ptc.packed(MegatronLayout.asSaved(MODEL, 1), from, 1), 0);
        // worker 1 is reached through a relay that records what crosses the network
        RecordingRelay relay = keep(new RecordingRelay(cluster.daemons.get(1).address()));
        Map<Integer, InetSocketAddress> addrs = Map.of(0, d0.address(), 1, relay.address());
        JsonNode r = cluster.await(cluster.reconfigure("tls", ProcessCluster.config(from, 1, 0),
                ProcessCluster.config(to, 1, 0), addrs, 3));
        assertEquals("committed", r.get("state").asText(), r.toString());
        assertTrue(r.at("/report/interWorkerBytes").asLong() > 0, r.toString());
        cluster.assertLoaded("tls", cluster.daemons, Ptc.packed(MODEL, to, 1), 0, full);
        byte[] wire = relay.sent();
        String text = new String(wire, StandardCharsets.ISO_8859_1);
        assertTrue(wire.length > 1000 && wire[0] == 0x16, "the relay saw TLS records: " + wire.length + " bytes");
        assertFalse(text.contains(TOKEN), "the token crossed the wire in clear");
        assertFalse(text.contains("Bearer") || text.contains("/api/v1/"), "HTTP crossed the wire in clear");
    }

    @Test
    void tlsDaemon_refusesPlainHttp_andAnswersHttpsWithTheToken() throws Exception {
        DaemonProcess d = daemon(Map.of(), tlsArgs());
        String plain = "http://127.0.0.1:" + d.address().getPort() + "/api/v1/health";
        HttpResponse<String> refused = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(plain)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(400, refused.statusCode());
        assertTrue(refused.body().contains("serves HTTPS only"), refused.body());
        assertEquals(200, status(DaemonLink.tls(certs.ca(), TOKEN), d.url() + "/api/v1/dirs/"));
        assertEquals(401, status(DaemonLink.tls(certs.ca(), null), d.url() + "/api/v1/dirs/"));
    }

    @Test
    void cliAndPythonClient_overHttps_withTheCaAndATokenFile() throws Exception {
        DaemonProcess d = daemon(Map.of(), tlsArgs());
        String out = CliIT.run("status", "--addr", d.url(), "--tls-ca", certs.ca().toString(), "--token-file",
                tokenFile.toString());
        assertTrue(out.contains(": ok"), out);
        ProcessBuilder py = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/test_tls.py").toString())
                .redirectErrorStream(true);
        py.environment().remove("TENPLEX_TOKEN");
        py.environment().putAll(Map.of("TENPLEX_ADDR", d.url(), "TENPLEX_CA", certs.ca().toString(),
                "TENPLEX_TOKEN_FILE", tokenFile.toString()));
        Process p = py.start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), log);
        assertTrue(log.strip().endsWith("OK"), log);
    }

    @Test
    void tokenFromTheEnvironment_orAFile_guardsTheDaemon_andOnTheCommandLineIsWarnedAbout() throws Exception {
        DaemonLink plain = DaemonLink.plain(null);
        DaemonProcess env = daemon(Map.of("TENPLEX_TOKEN", "from-env"));
        assertEquals(401, status(plain, env.url() + "/api/v1/dirs/"));
        assertEquals(200, status(DaemonLink.plain("from-env"), env.url() + "/api/v1/dirs/"));
        DaemonProcess envFile = daemon(Map.of("TENPLEX_TOKEN_FILE", tokenFile.toString()));
        assertEquals(200, status(DaemonLink.plain(TOKEN), envFile.url() + "/api/v1/dirs/"));
        assertEquals(401, status(plain, envFile.url() + "/api/v1/dirs/"));

        Path open = Files.writeString(dir.resolve("open-token"), "from-file\n");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        DaemonProcess file = daemon(Map.of(), "--token-file", open.toString());
        assertEquals(200, status(DaemonLink.plain("from-file"), file.url() + "/api/v1/dirs/"));
        assertEquals(401, status(DaemonLink.plain("from-env"), file.url() + "/api/v1/dirs/"));
        assertTrue(file.log().stream().anyMatch(l -> l.contains("is readable by every user")), file.log().toString());
        assertFalse(file.log().stream().anyMatch(l -> l.contains("from-file")), "the token was logged");

        DaemonProcess cli = daemon(Map.of(), "--token", "on-the-command-line");
        assertTrue(cli.log().stream().anyMatch(l -> l.contains("--token is visible to every local user")),
                cli.log().toString());
    }

    /** Runs tenplexd to its exit; returns the exit status and what it printed. */
    private static Map.Entry<Integer, String> exits(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), Tenplexd.class.getName(), "--port", "0"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return Map.entry(p.waitFor(), out);
    }

    @Test
    void badTlsAndTokenFiles_areClearCliErrors_withExitStatus2() throws Exception {
        Path junk = secret("junk.pem", "not-a-certificate-sekrit");
        Path empty = secret("empty-token", "\n");
        Object[][] cases = {
            {new String[] {"--tls-cert", dir.resolve("missing.crt").toString(), "--tls-key", certs.key.toString()},
                "TLS certificate (--tls-cert) " + dir.resolve("missing.crt") + " does not exist"},
            {new String[] {"--tls-cert", junk.toString(), "--tls-key", certs.key.toString()}, "cannot be used"},
            {new String[] {"--tls-cert", certs.cert.toString()}, "--tls-cert and --tls-key go together"},
            {new String[] {"--tls-ca", certs.ca().toString()}, "--tls-ca needs --tls-cert and --tls-key"},
            {new String[] {"--tls-cert", certs.cert.toString(), "--tls-key", certs.key.toString(), "--tls-ca",
                junk.toString()}, "holds no PEM certificate"},
            {new String[] {"--token-file", empty.toString()}, "token file " + empty + " is empty"},
            {new String[] {"--token-file", dir.resolve("no-token").toString()}, "does not exist"},
            {new String[] {"--token", "a", "--token-file", tokenFile.toString()}, "give the token once"},
        };
        for (Object[] c : cases) {
            Map.Entry<Integer, String> r = exits((String[]) c[0]);
            assertEquals(2, r.getKey(), r.getValue());
            assertTrue(r.getValue().contains("tenplexd: " + c[1]) || r.getValue().contains((String) c[1]), r.getValue());
            assertFalse(r.getValue().contains("sekrit") || r.getValue().contains(TOKEN), r.getValue());
            assertFalse(r.getValue().contains("Exception in thread"), r.getValue());
        }
    }
}
