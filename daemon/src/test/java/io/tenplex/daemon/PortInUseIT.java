package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** tenplexd on a port that is taken: one line that names the address and {@code --port}, exit status 1. */
class PortInUseIT {
    @Test
    void portInUse_namesThePort_andTheOption() throws Exception {
        PrintStream old = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int rc = new CommandLine(new Tenplexd()).execute("--bind", "127.0.0.1", "--port",
                    Integer.toString(taken.getLocalPort()), "--memory-limit", "64m");
            String text = err.toString(StandardCharsets.UTF_8);
            assertEquals(1, rc, text);
            assertTrue(text.contains("tenplexd: cannot listen on 127.0.0.1:" + taken.getLocalPort() + ": the address is "
                    + "already in use (another tenplexd?); stop that process or choose another port with --port"), text);
        } finally {
            System.setErr(old);
        }
    }
}
