package io.tenplex.server.peer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.server.NettyLeaks;
import io.tenplex.server.RestServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A REST server with TLS on loopback, its JDK and Netty clients, and what crosses the wire. */
class TlsTest {
    private static final String TOKEN = "tok-3f9a1c";
    @TempDir
    static Path dir;
    private static TestCerts certs;
    private static TestCerts stranger;

    private TensorStore store;
    private RestServer server;
    private InetSocketAddress addr;
    private byte[] data;

    @BeforeAll
    static void makeCerts() throws Exception {
        certs = TestCerts.create(dir, "daemon");
        stranger = TestCerts.create(dir, "stranger");
    }

    @BeforeEach
    void start() throws Exception {
        store = new TensorStore(new Allocator(64 << 20), 4096);
        data = new byte[256 * 1000 * 4];
        new Random(11).nextBytes(data);
        Fixtures.putTensor(store, "/job/j/save/0/w", TensorMeta.of(DType.F32, 256, 1000), data, false);
        server = new RestServer(store, TOKEN, TlsFiles.server(certs.cert, certs.key));
        addr = server.start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        server.close();
        store.close();
    }

    @AfterAll
    static void noLeaks() {
        NettyLeaks.assertNone();
    }

    private static HttpResponse<byte[]> get(DaemonLink link, InetSocketAddress a, String path) throws Exception {
        return link.http().send(link.request(a, path).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Test
    void httpsWithTheCa_answers_whilePlainHttpAndUntrustedClientsAreRefused() throws Exception {
        DaemonLink link = DaemonLink.tls(certs.ca(), TOKEN);
        assertEquals("https://127.0.0.1:" + addr.getPort() + "/x", link.uri(addr, "/x").toString());
        HttpResponse<byte[]> r = get(link, addr, "/api/v1/tensors/job/j/save/0/w");
        assertEquals(200, r.statusCode());
        assertArrayEquals(data, r.body());
        assertEquals(401, get(DaemonLink.tls(certs.ca(), null), addr, "/api/v1/tensors/job/j/save/0/w").statusCode());

        HttpClient plain = HttpClient.newHttpClient();
        HttpResponse<String> refused = plain.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + addr.getPort() + "/api/v1/tensors/job/j/save/0/w")).header("Authorization", "Bearer " + TOKEN).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(400, refused.statusCode());
        assertEquals("this port serves HTTPS only: use https", refused.body().strip());
        IOException untrusted = assertThrows(IOException.class, () -> get(DaemonLink.tls(stranger.ca(), TOKEN), addr,
                "/api/v1/health"));
        assertTrue(untrusted instanceof SSLHandshakeException, untrusted.toString());
        assertEquals(200, get(link, addr, "/api/v1/health").statusCode()); // the server is none the worse
    }

    @Test
    void peerClientOverTls_readsARegionExactly_andNoTokenCrossesTheWireInClear() throws Exception {
        try (RecordingRelay relay = new RecordingRelay(addr); PeerClient peers = new PeerClient(
                DaemonLink.tls(certs.ca(), TOKEN), 2)) {
            ByteBuffer dst = ByteBuffer.allocate(100 * 1000 * 4);
            peers.readRegion(relay.address(), "/job/j/save/0/w", "100:200,0:1000", dst).get();
            assertArrayEquals(java.util.Arrays.copyOfRange(data, 100 * 4000, 200 * 4000), dst.array());
            assertEquals(200, get(peers.link(), relay.address(), "/api/v1/tensors/job/j/save/0/w").statusCode());
            String wire = new String(relay.sent(), StandardCharsets.ISO_8859_1);
            assertEquals(0x16, relay.sent()[0], "a TLS handshake record opens the connection");
            assertFalse(wire.contains(TOKEN), "the token crossed the wire in clear");
            assertFalse(wire.contains("Bearer") || wire.contains("/api/v1/"), "HTTP crossed the wire in clear");
        }
    }

    @Test
    void peerClient_refusesAPeerWhoseCertificateItDoesNotTrust() {
        try (PeerClient peers = new PeerClient(DaemonLink.tls(stranger.ca(), TOKEN), 2)) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> peers.readRegion(addr,
                    "/job/j/save/0/w", "0:1,0:1", ByteBuffer.allocate(4)).get());
            assertTrue(e.getCause() instanceof IOException, e.toString());
        }
    }

    @Test
    void badTlsFiles_areClearErrors_thatNeverEchoTheirContents() throws Exception {
        Path junk = Files.writeString(dir.resolve("junk.pem"), "secret-looking-content");
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> TlsFiles.server(dir.resolve("nope.crt"), certs.key));
        assertTrue(missing.getMessage().contains("nope.crt does not exist"), missing.getMessage());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> TlsFiles.server(junk, certs.key));
        assertTrue(bad.getMessage().contains("cannot be used"), bad.getMessage());
        IllegalArgumentException ca = assertThrows(IllegalArgumentException.class, () -> DaemonLink.tls(junk, null));
        assertTrue(ca.getMessage().contains("holds no PEM certificate"), ca.getMessage());
        for (IllegalArgumentException e : new IllegalArgumentException[] {missing, bad, ca}) {
            assertFalse(e.getMessage().contains("secret-looking"), e.getMessage());
        }
    }
}
