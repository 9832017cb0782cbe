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
        assertTrue(c.sources().dataRoots().isEmpty(), "local dataset sources must be off by default");
        assertTrue(c.sources().allowedHosts().isEmpty(), "URL dataset sources must be off by default");
        assertEquals(java.time.Duration.ofSeconds(5), c.sources().connectTimeout());
        assertEquals(java.time.Duration.ofSeconds(30), c.sources().readTimeout());
    }

    @Test
    void datasetSources_commandLineListsReplaceTheFiles_andBadOnesAreClearErrors(@TempDir Path dir) throws Exception {
        Path a = Files.createDirectories(dir.resolve("a"));
        Path b = Files.createDirectories(dir.resolve("b"));
        Path f = dir.resolve("c.json");
        Files.writeString(f, "{\"dataRoots\": [\"" + a + "\"], \"allowSourceHosts\": [\"data.example:8080\"], "
                + "\"sourceReadTimeout\": \"2m\"}");
        DaemonConfig fromFile = DaemonConfig.resolve(NONE, DaemonConfig.Given.fromFile(f), 24 * GIB, 100 * GIB);
        assertEquals(java.util.List.of(a), fromFile.sources().dataRoots());
        assertEquals(java.util.List.of("data.example:8080"), fromFile.sources().allowedHosts());
        assertEquals(java.time.Duration.ofMinutes(2), fromFile.sources().readTimeout());
        DaemonConfig.Given cli = new DaemonConfig.Given(null, null, null, null, null, null, null,
                DaemonConfig.Timeouts.NONE, new DaemonConfig.Sources(java.util.List.of(b), null, "500ms", null));
        DaemonConfig both = DaemonConfig.resolve(cli, DaemonConfig.Given.fromFile(f), 24 * GIB, 100 * GIB);
        assertEquals(java.util.List.of(b), both.sources().dataRoots());
        assertEquals(java.util.List.of("data.example:8080"), both.sources().allowedHosts());
        assertEquals(java.time.Duration.ofMillis(500), both.sources().connectTimeout());
        assertTrue(both.describe().contains("dataRoots=[" + b + "]"), both.describe());
        for (DaemonConfig.Sources bad : java.util.List.of(
                new DaemonConfig.Sources(java.util.List.of(Path.of("relative/dir")), null, null, null),
                new DaemonConfig.Sources(null, java.util.List.of("http://x/"), null, null),
                new DaemonConfig.Sources(null, java.util.List.of("x:99999"), null, null),
                new DaemonConfig.Sources(null, null, "soon", null),
                new DaemonConfig.Sources(null, null, null, "0s"))) {
            assertThrows(IllegalArgumentException.class, () -> DaemonConfig.resolve(new DaemonConfig.Given(null, null,
                    null, null, null, null, null, DaemonConfig.Timeouts.NONE, bad), NONE, 24 * GIB, 100 * GIB), bad.toString());
        }
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
                () -> ConfigValues.parsePeers("0=nohostport"));
        assertTrue(e.getMessage().contains("is not worker=host:port"), e.getMessage());
    }

    @Test
    void timeoutsAndOrigins_defaultsArePinned_fileAndCommandLineOverride(@TempDir Path dir) throws Exception {
        DaemonConfig d = DaemonConfig.resolve(NONE, NONE, 24 * GIB, 100 * GIB);
        assertEquals(java.time.Duration.ofSeconds(120), d.limits().idle());
        assertEquals(java.time.Duration.ofSeconds(30), d.limits().head());
        assertEquals(java.time.Duration.ofSeconds(60), d.limits().body());
        assertEquals(java.time.Duration.ofSeconds(120), d.limits().write());
        assertEquals(16 << 20, d.limits().controlBody());
        assertEquals(java.time.Duration.ofSeconds(60), d.preparedTimeout());
        assertTrue(d.limits().allowedOrigins().isEmpty());
        Path f = dir.resolve("c.json");
        Files.writeString(f, "{\"bodyTimeout\": \"5s\", \"idleTimeout\": \"2m\", \"allowOrigins\": [\"https://a.example\"]}");
        DaemonConfig c = DaemonConfig.resolve(new DaemonConfig.Given(null, null, null, null, null, null, null,
                new DaemonConfig.Timeouts(null, "1500ms", "7", null, null, "90s"), DaemonConfig.Sources.NONE),
                DaemonConfig.Given.fromFile(f), 24 * GIB,
                100 * GIB);
        assertEquals(java.time.Duration.ofSeconds(7), c.limits().body());
        assertEquals(java.time.Duration.ofMinutes(2), c.limits().idle());
        assertEquals(java.time.Duration.ofMillis(1500), c.limits().head());
        assertEquals(java.time.Duration.ofSeconds(90), c.preparedTimeout());
        assertEquals(java.util.List.of("https://a.example"), c.limits().allowedOrigins());
        for (String bad : new String[] {"0s", "-3s", "soon", "1.5s", ""}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ConfigValues.duration("body timeout", bad, null));
            assertTrue(e.getMessage().contains("not a positive duration"), e.getMessage());
        }
    }

    @Test
    void sizes_parse() {
        assertEquals(512L << 20, ConfigValues.parseSize("512m", GIB));
        assertEquals(3 * GIB, ConfigValues.parseSize("3GiB", GIB));
        assertEquals(1234, ConfigValues.parseSize("1234", GIB));
        assertEquals(GIB / 4, ConfigValues.parseSize("25%", GIB));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.parseSize("lots", GIB));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.parseSize("150%", GIB));
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
        Path fifo = dir.resolve("fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        for (Object[] c : new Object[][] {{empty, "is empty"}, {dir.resolve("none"), "does not exist"},
                {twoLines, "control characters"}, {big, "larger than 4096 bytes"},
                {Path.of("/dev/zero"), "not a regular file"}, {fifo, "not a regular file"}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tokens.read((Path) c[0]));
            assertTrue(e.getMessage().contains((String) c[1]) && e.getMessage().contains(c[0].toString()),
                    e.getMessage());
            assertTrue(!e.getMessage().contains("sekrit"), e.getMessage());
        }
    }

    @Test
    void anEmptyToken_fromAnySource_refusesToStart_ratherThanRunningOpen(@TempDir Path dir) throws Exception {
        Path cfg = Files.writeString(dir.resolve("c.json"), "{\"token\": \"\"}");
        for (java.util.function.Supplier<DaemonConfig> empty : java.util.List.<java.util.function.Supplier<DaemonConfig>>of(
                () -> DaemonConfig.resolve(new DaemonConfig.Given(null, null, null, null, ""), NONE, NONE, 24 * GIB,
                        100 * GIB),
                () -> DaemonConfig.resolve(NONE, DaemonConfig.Given.fromEnv(java.util.Map.of("TENPLEX_TOKEN", " ")), NONE,
                        24 * GIB, 100 * GIB),
                () -> DaemonConfig.resolve(NONE, NONE, DaemonConfig.Given.fromFile(cfg), 24 * GIB, 100 * GIB))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, empty::get);
            assertTrue(e.getMessage().contains("is empty"), e.getMessage());
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

    private static DaemonConfig.Given cliTuning(String peerConnections, String coordinatorTimeout) {
        return new DaemonConfig.Given(null, null, null, null, null, null, null, DaemonConfig.Timeouts.NONE,
                DaemonConfig.Sources.NONE, null, null, null, null,
                new DaemonConfig.Tunables(peerConnections, coordinatorTimeout));
    }

    @Test
    void tuning_defaultsArePinned_fileAndCommandLineOverride(@TempDir Path dir) throws Exception {
        DaemonConfig.Tuning d = DaemonConfig.resolve(NONE, NONE, 24 * GIB, 100 * GIB).tuning();
        assertEquals(8, d.peerConnections());
        assertEquals(java.time.Duration.ofMinutes(10), d.coordinatorTimeout());
        assertEquals(64, d.jobReaderThreads());
        assertEquals(2, d.restWorkThreads());
        assertEquals(0, d.datasetLoaderThreads());
        assertEquals(2, d.peerEventLoopThreads());
        Path f = Files.writeString(dir.resolve("c.json"), "{\"peerConnections\": 16, \"coordinatorTimeout\": \"2m\"}");
        DaemonConfig fromFile = DaemonConfig.resolve(NONE, DaemonConfig.Given.fromFile(f), 24 * GIB, 100 * GIB);
        assertEquals(16, fromFile.tuning().peerConnections());
        assertEquals(java.time.Duration.ofMinutes(2), fromFile.tuning().coordinatorTimeout());
        DaemonConfig both = DaemonConfig.resolve(cliTuning("4", null), DaemonConfig.Given.fromFile(f), 24 * GIB,
                100 * GIB);
        assertEquals(4, both.tuning().peerConnections());
        assertEquals(java.time.Duration.ofMinutes(2), both.tuning().coordinatorTimeout());
        assertTrue(both.describe().contains("peerConnections=4"), both.describe());
        assertTrue(both.describe().contains("coordinator=120s"), both.describe());
    }

    @Test
    void tuning_badValues_areClearErrors() {
        for (String bad : new String[] {"0", "-1", "1025", "many", "2.5", ""}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> DaemonConfig.resolve(cliTuning(bad, null), NONE, 24 * GIB, 100 * GIB));
            assertEquals("peer connections '" + bad + "' is not a whole number from 1 to 1024", e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DaemonConfig.resolve(cliTuning(null, "soon"), NONE, 24 * GIB, 100 * GIB));
        assertTrue(e.getMessage().startsWith("coordinator timeout 'soon' is not a positive duration"), e.getMessage());
        IllegalArgumentException tooShort = assertThrows(IllegalArgumentException.class,
                () -> DaemonConfig.resolve(cliTuning(null, "10ms"), NONE, 24 * GIB, 100 * GIB));
        assertTrue(tooShort.getMessage().contains("out of range (100ms to 1 day)"), tooShort.getMessage());
    }

    @Test
    void checkpointDir_isOffByDefault_andComesFromTheFileOrTheCommandLine(@TempDir Path dir) throws Exception {
        DaemonConfig d = DaemonConfig.resolve(NONE, NONE, 24 * GIB, 100 * GIB);
        assertNull(d.tuning().checkpointDir(), "L4 is off unless a directory is given");
        assertTrue(d.describe().contains("checkpointDir=none (L4 off)"), d.describe());
        Path f = Files.writeString(dir.resolve("c.json"), "{\"checkpointDir\": \"" + dir.resolve("file") + "\"}");
        DaemonConfig fromFile = DaemonConfig.resolve(NONE, DaemonConfig.Given.fromFile(f), 24 * GIB, 100 * GIB);
        assertEquals(dir.resolve("file"), fromFile.tuning().checkpointDir());
        DaemonConfig.Given cli = new DaemonConfig.Given(null, null, null, null, null, null, null,
                DaemonConfig.Timeouts.NONE, DaemonConfig.Sources.NONE, null, null, null, null,
                new DaemonConfig.Tunables(null, null, null, dir.resolve("cli")));
        DaemonConfig both = DaemonConfig.resolve(cli, DaemonConfig.Given.fromFile(f), 24 * GIB, 100 * GIB);
        assertEquals(dir.resolve("cli"), both.tuning().checkpointDir());
        assertTrue(both.describe().contains("checkpointDir=" + dir.resolve("cli")), both.describe());
    }

    @Test
    void streamMemory_isAQuarterOfTheHeapByDefault_andComesFromTheFileOrTheCommandLine(@TempDir Path dir)
            throws Exception {
        DaemonConfig d = DaemonConfig.resolve(NONE, NONE, 24 * GIB, 100 * GIB);
        assertEquals(0, d.tuning().streamMemory());
        assertTrue(d.describe().contains("streamMemory=25% of the max heap"), d.describe());
        Path f = Files.writeString(dir.resolve("s.json"), "{\"streamMemory\": \"64m\"}");
        assertEquals(64L << 20, DaemonConfig.resolve(NONE, DaemonConfig.Given.fromFile(f), 24 * GIB, 100 * GIB)
                .tuning().streamMemory());
        DaemonConfig.Given cli = new DaemonConfig.Given(null, null, null, null, null, null, null,
                DaemonConfig.Timeouts.NONE, DaemonConfig.Sources.NONE, null, null, null, null,
                new DaemonConfig.Tunables(null, null, null, null, "1g"));
        assertEquals(1L << 30, DaemonConfig.resolve(cli, DaemonConfig.Given.fromFile(f), 24 * GIB, 100 * GIB)
                .tuning().streamMemory());
        DaemonConfig.Given zero = new DaemonConfig.Given(null, null, null, null, null, null, null,
                DaemonConfig.Timeouts.NONE, DaemonConfig.Sources.NONE, null, null, null, null,
                new DaemonConfig.Tunables(null, null, null, null, "0"));
        assertThrows(IllegalArgumentException.class, () -> DaemonConfig.resolve(zero, NONE, 24 * GIB, 100 * GIB));
    }
}
