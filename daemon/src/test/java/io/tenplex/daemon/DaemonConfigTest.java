package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DaemonConfigTest {
    private static final long GIB = 1L << 30;
    private static final DaemonConfig.Given NONE = DaemonConfig.Given.none();

    @Test
    void defaults_arePinned() {
        DaemonConfig c = DaemonConfig.resolve(NONE, NONE, 24 * GIB, 100 * GIB);
        assertEquals("127.0.0.1", c.bind());
        assertEquals(20010, c.port());
        assertEquals(12 * GIB, c.memoryLimit());
        assertNull(c.mount());
        assertNull(c.token());
    }

    @Test
    void defaultLimit_staysWithinDirectMemory() {
        DaemonConfig c = DaemonConfig.resolve(NONE, NONE, 24 * GIB, 4 * GIB);
        assertEquals(4 * GIB - DaemonConfig.DIRECT_HEADROOM, c.memoryLimit());
    }

    @Test
    void commandLine_overridesFile_overridesDefaults(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("tenplexd.json");
        Files.writeString(f, "{\"port\": 9000, \"bind\": \"0.0.0.0\", \"memoryLimit\": \"2g\", \"token\": \"t\"}");
        DaemonConfig.Given file = DaemonConfig.Given.fromFile(f);
        DaemonConfig c = DaemonConfig.resolve(new DaemonConfig.Given(null, 9100, null, null, null), file, 24 * GIB,
                100 * GIB);
        assertEquals(9100, c.port());
        assertEquals("0.0.0.0", c.bind());
        assertEquals(2 * GIB, c.memoryLimit());
        assertEquals("t", c.token());
        assertTrue(c.describe().contains("token=on"));
        assertTrue(!c.describe().contains("=t "));
    }

    @Test
    void peers_parse_andBadOnesAreClearErrors() {
        DaemonConfig c = DaemonConfig.resolve(new DaemonConfig.Given(null, null, null, null, null,
                "0=10.0.0.1:20010, 1=worker-b:20011"), NONE, 24 * GIB, 100 * GIB);
        assertEquals(2, c.peers().size());
        assertEquals(20011, c.peers().get(1).getPort());
        assertEquals("worker-b", c.peers().get(1).getHostString());
        assertTrue(DaemonConfig.resolve(NONE, NONE, 24 * GIB, 100 * GIB).peers().isEmpty());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DaemonConfig.parsePeers("0=nohostport"));
        assertTrue(e.getMessage().contains("is not worker=host:port"), e.getMessage());
    }

    @Test
    void sizes_parse() {
        assertEquals(512L << 20, DaemonConfig.parseSize("512m", GIB));
        assertEquals(3 * GIB, DaemonConfig.parseSize("3GiB", GIB));
        assertEquals(1234, DaemonConfig.parseSize("1234", GIB));
        assertEquals(GIB / 4, DaemonConfig.parseSize("25%", GIB));
        assertThrows(IllegalArgumentException.class, () -> DaemonConfig.parseSize("lots", GIB));
        assertThrows(IllegalArgumentException.class, () -> DaemonConfig.parseSize("150%", GIB));
    }

    @Test
    void badValues_areClearErrors(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.json");
        Files.writeString(f, "{\"prot\": 1}");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DaemonConfig.Given.fromFile(f));
        assertTrue(e.getMessage().contains("unknown key 'prot'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DaemonConfig.Given.fromFile(dir.resolve("missing.json")));
        IllegalArgumentException over = assertThrows(IllegalArgumentException.class, () -> DaemonConfig.resolve(
                new DaemonConfig.Given(null, null, "8g", null, null), NONE, 24 * GIB, 4 * GIB));
        assertTrue(over.getMessage().contains("MaxDirectMemorySize"), over.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DaemonConfig.resolve(
                new DaemonConfig.Given(null, 70000, null, null, null), NONE, 24 * GIB, 100 * GIB));
    }

    private static DaemonConfig.Given cliToken(String token, Path file) {
        return new DaemonConfig.Given(null, null, null, null, token, null, null, file, null, null, null);
    }

    @Test
    void token_optionsOverEnvironmentOverFile_andAFileIsReadStripped(@TempDir Path dir) throws Exception {
        Path f = Files.writeString(dir.resolve("t"), "  from-file\n");
        Path cfg = Files.writeString(dir.resolve("c.json"), "{\"tokenFile\": \"" + f + "\"}");
        DaemonConfig.Given env = DaemonConfig.Given.fromEnv(java.util.Map.of("TENPLEX_TOKEN", "from-env"));
        DaemonConfig.Given file = DaemonConfig.Given.fromFile(cfg);
        assertEquals("from-cli", DaemonConfig.resolve(cliToken("from-cli", null), env, file, 24 * GIB, 100 * GIB).token());
        assertEquals("from-file", DaemonConfig.resolve(cliToken(null, f), env, NONE, 24 * GIB, 100 * GIB).token());
        assertEquals("from-env", DaemonConfig.resolve(NONE, env, file, 24 * GIB, 100 * GIB).token());
        assertEquals("from-file", DaemonConfig.resolve(NONE, NONE, file, 24 * GIB, 100 * GIB).token());
        assertEquals("from-file", DaemonConfig.resolve(NONE, DaemonConfig.Given.fromEnv(java.util.Map.of(
                "TENPLEX_TOKEN_FILE", f.toString())), NONE, 24 * GIB, 100 * GIB).token());
        IllegalArgumentException both = assertThrows(IllegalArgumentException.class, () -> DaemonConfig.resolve(
                cliToken("x", f), NONE, NONE, 24 * GIB, 100 * GIB));
        assertTrue(both.getMessage().contains("--token or --token-file, not both"), both.getMessage());
    }

    @Test
    void tokenFile_emptyMissingOrOdd_isAClearErrorThatNeverEchoesIt(@TempDir Path dir) throws Exception {
        Path empty = Files.writeString(dir.resolve("empty"), "\n\t \n");
        Path twoLines = Files.writeString(dir.resolve("two"), "sekrit-a\nsekrit-b\n");
        Path big = Files.write(dir.resolve("big"), new byte[Tokens.MAX_BYTES + 1]);
        for (Object[] c : new Object[][] {{empty, "is empty"}, {dir.resolve("none"), "does not exist"},
                {twoLines, "control characters"}, {big, "larger than 4096 bytes"}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tokens.read((Path) c[0]));
            assertTrue(e.getMessage().contains((String) c[1]) && e.getMessage().contains(c[0].toString()),
                    e.getMessage());
            assertTrue(!e.getMessage().contains("sekrit"), e.getMessage());
        }
    }

    @Test
    void tls_needsCertAndKeyTogether_andTheCaOnlyWithThem(@TempDir Path dir) throws Exception {
        Path cert = dir.resolve("c.pem");
        Path key = dir.resolve("k.pem");
        Path ca = dir.resolve("ca.pem");
        assertNull(DaemonConfig.resolve(NONE, NONE, 24 * GIB, 100 * GIB).tls());
        DaemonConfig.Tls tls = DaemonConfig.resolve(new DaemonConfig.Given(null, null, null, null, null, null, null,
                null, cert, key, ca), NONE, NONE, 24 * GIB, 100 * GIB).tls();
        assertEquals(new DaemonConfig.Tls(cert, key, ca), tls);
        Path cfg = Files.writeString(dir.resolve("c.json"), "{\"tlsCert\": \"" + cert + "\", \"tlsKey\": \"" + key
                + "\"}");
        DaemonConfig fromFile = DaemonConfig.resolve(NONE, NONE, DaemonConfig.Given.fromFile(cfg), 24 * GIB, 100 * GIB);
        assertEquals(new DaemonConfig.Tls(cert, key, null), fromFile.tls());
        assertTrue(fromFile.describe().contains("tls=on"), fromFile.describe());
        assertThrows(IllegalArgumentException.class, () -> DaemonConfig.Tls.of(cert, null, null));
        assertThrows(IllegalArgumentException.class, () -> DaemonConfig.Tls.of(null, key, null));
        assertThrows(IllegalArgumentException.class, () -> DaemonConfig.Tls.of(null, null, ca));
    }
}
