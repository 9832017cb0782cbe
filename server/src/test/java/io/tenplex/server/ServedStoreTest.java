package io.tenplex.server;

import io.tenplex.store.TensorStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * Tests against a real {@link RestServer} on an ephemeral loopback port, over a fresh store for each
 * test. After each test the server stops and the store closes, which fails the test when a request
 * left memory allocated; after the class, Netty must hold no leaked buffer.
 */
abstract class ServedStoreTest {
    protected TensorStore store;
    protected RestServer server;
    protected int port;

    /** The store each test starts with. */
    abstract TensorStore newStore();

    /** The server over {@code store}, before it starts: routes are added here. */
    RestServer newServer(TensorStore store) {
        return new RestServer(store, null);
    }

    @BeforeEach
    final void startServer() throws Exception {
        store = newStore();
        server = newServer(store);
        port = server.start("127.0.0.1", 0).getPort();
    }

    @AfterEach
    final void stopServer() {
        server.close();
        store.close(); // throws if a request left memory behind
    }

    @AfterAll
    static void noNettyLeaks() {
        NettyLeaks.assertNone();
    }

    /** The server's address, as a URL's start. */
    String base() {
        return "http://127.0.0.1:" + port;
    }
}
