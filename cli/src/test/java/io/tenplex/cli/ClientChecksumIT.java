package io.tenplex.cli;

import io.tenplex.daemon.DaemonProcess;
import io.tenplex.daemon.FaultProxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.client.Tensor;
import io.tenplex.client.TenplexClient;
import io.tenplex.client.TenplexException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The clients' checksums against a real daemon process: bodies damaged on the way (a {@link
 * FaultProxy} flips a byte of a tensor read and keeps the daemon's checksum) are refused by the JVM
 * and the Python client, asked for or not; uploads with the client's checksum are stored.
 */
class ClientChecksumIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private DaemonProcess daemon() throws Exception {
        DaemonProcess d = DaemonProcess.start("--port", "0", "--memory-limit", "64m");
        open.add(d);
        return d;
    }

    private String corrupting(DaemonProcess d) throws Exception {
        FaultProxy p = new FaultProxy(d.address(), FaultProxy.Mode.CORRUPT);
        open.add(0, p);
        return "http://127.0.0.1:" + p.port();
    }

    @Test
    void javaClient_verifiesTheDaemonsChecksum_andSendsItsOwn() throws Exception {
        DaemonProcess d = daemon();
        byte[] data = new byte[64 * 64 * 4];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 31);
        }
        TenplexClient direct = new TenplexClient(d.url(), null).withChecksums(true);
        direct.putTensor("/c/w", new Tensor("f32", new long[] {64, 64}, data), false);
        direct.putFile("/c/f", "file".getBytes(StandardCharsets.UTF_8), false);
        assertArrayEquals(data, direct.getTensor("/c/w", null).data());
        assertArrayEquals("file".getBytes(StandardCharsets.UTF_8), direct.getFile("/c/f"));
        for (boolean ask : new boolean[] {false, true}) {
            TenplexClient damaged = new TenplexClient(corrupting(d), null).withChecksums(ask);
            TenplexException e = assertThrows(TenplexException.class, () -> damaged.getTensor("/c/w", null));
            assertTrue(e.getMessage().contains("checksum mismatch"), e.getMessage());
        }
    }

    @Test
    void pythonClient_verifiesTheDaemonsChecksum_andSendsItsOwn() throws Exception {
        DaemonProcess d = daemon();
        ProcessBuilder py = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/test_checksums.py")
                .toString()).redirectErrorStream(true);
        py.environment().put("TENPLEX_ADDR", d.url());
        py.environment().put("TENPLEX_CORRUPT_ADDR_0", corrupting(d));
        py.environment().put("TENPLEX_CORRUPT_ADDR_1", corrupting(d));
        Process p = py.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), output);
        assertTrue(output.strip().endsWith("OK"), output);
    }
}
