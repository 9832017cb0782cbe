package io.tenplex.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.server.peer.TestCerts;
import io.tenplex.server.peer.TlsFiles;
import io.tenplex.server.RestServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JVM client against a real REST server with TLS and a token: configured from the environment. */
class JavaClientTlsIT {
    @TempDir
    Path dir;
    private TensorStore store;
    private RestServer server;
    private TestCerts certs;
    private String addr;

    @BeforeEach
    void start() throws Exception {
        certs = TestCerts.create(dir, "daemon");
        store = new TensorStore(new Allocator(64L << 20));
        server = new RestServer(store, "jvm-token", TlsFiles.server(certs.cert, certs.key));
        addr = "https://127.0.0.1:" + server.start("127.0.0.1", 0).getPort();
    }

    @AfterEach
    void stop() {
        server.close();
        store.close();
    }

    @Test
    void fromEnvironment_usesTheCaAndTheTokenFile_overHttps() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "jvm-token\n");
        TenplexClient c = TenplexClient.fromEnvironment(Map.of("TENPLEX_ADDR", addr, "TENPLEX_CA",
                certs.ca().toString(), "TENPLEX_TOKEN_FILE", token.toString()));
        c.putFile("/job/j/note.txt", "hello".getBytes(StandardCharsets.UTF_8), false);
        assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8), c.getFile("/job/j/note.txt"));

        TenplexException noToken = assertThrows(TenplexException.class, () -> new TenplexClient(addr, null,
                certs.ca()).getFile("/job/j/note.txt"));
        assertEquals(401, noToken.status());
        TenplexException untrusted = assertThrows(TenplexException.class, () -> new TenplexClient(addr, "jvm-token")
                .getFile("/job/j/note.txt"));
        assertTrue(untrusted.getMessage().contains("cannot reach"), untrusted.getMessage());
    }

    @Test
    void badTokenAndCaFiles_areClearErrors_thatNeverEchoTheirContents() throws Exception {
        Path empty = Files.writeString(dir.resolve("empty"), " \n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TenplexClient.fromEnvironment(
                Map.of("TENPLEX_TOKEN_FILE", empty.toString())));
        assertTrue(e.getMessage().contains("is empty"), e.getMessage());
        Path junk = Files.writeString(dir.resolve("junk.pem"), "sekrit");
        IllegalArgumentException ca = assertThrows(IllegalArgumentException.class, () -> new TenplexClient(addr, null,
                junk));
        assertTrue(ca.getMessage().contains("junk.pem"), ca.getMessage());
        assertFalse(ca.getMessage().contains("sekrit"), ca.getMessage());
    }
}
