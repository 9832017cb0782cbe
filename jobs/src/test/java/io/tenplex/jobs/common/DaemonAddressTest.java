package io.tenplex.jobs.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

class DaemonAddressTest {
    @Test
    void hostAndPort_areTaken_asTheyAreGiven() {
        InetSocketAddress a = DaemonAddress.parse("127.0.0.1:20010");
        assertEquals("127.0.0.1", a.getHostString());
        assertEquals(20010, a.getPort());
        assertEquals(65535, DaemonAddress.parse("worker-3.tenplex.svc:65535").getPort());
        assertEquals(8, DaemonAddress.parse("[::1]:8").getPort());
    }

    @Test
    void urlsAndMalformedAddresses_areRefused_withTheAddressNamed() {
        for (String bad : new String[] {"http://127.0.0.1:20010", "127.0.0.1", "127.0.0.1:", ":20010", "h:0", "h:65536",
                "h:99999999999", "h:-1", "h:20010/api", "user@h:1", "h: 1", ""}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DaemonAddress.parse(bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
        }
    }

    @Test
    void aRequestsDaemons_withAUrl_isRefusedWhole() throws Exception {
        var ok = new ObjectMapper().readTree("{\"0\": \"10.0.0.1:20010\", \"1\": \"10.0.0.2:20010\"}");
        assertEquals(2, ConfigJson.daemons(ok).size());
        var url = new ObjectMapper().readTree("{\"0\": \"10.0.0.1:20010\", \"1\": \"http://10.0.0.2:20010\"}");
        assertThrows(IllegalArgumentException.class, () -> ConfigJson.daemons(url));
    }
}
