package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class SelfWorkerTest {
    private static final Map<Integer, InetSocketAddress> PEERS = Map.of(0, new InetSocketAddress("127.0.0.1", 7000),
            1, new InetSocketAddress("127.0.0.1", 7001), 2, new InetSocketAddress("10.255.255.1", 7002));

    @Test
    void theEntryAtItsOwnAddress_isTheDaemonsWorker() {
        assertEquals(OptionalInt.of(1), SelfWorker.find("127.0.0.1:7001", PEERS));
    }

    @Test
    void boundToEveryInterface_theOnlyLocalEntryOnItsPort() {
        assertEquals(OptionalInt.of(0), SelfWorker.find("192.0.2.7:7000", PEERS)); // the host's address, peers say loopback
    }

    @Test
    void notAmongThePeers_hasNoWorkerNumber() {
        assertEquals(OptionalInt.empty(), SelfWorker.find("127.0.0.1:9999", PEERS));
        assertEquals(OptionalInt.empty(), SelfWorker.find("192.0.2.7:7002", PEERS)); // same port, not this host
        assertEquals(OptionalInt.empty(), SelfWorker.find("", PEERS));
    }
}
