package io.tenplex.adapters.kubernetes;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.function.BooleanSupplier;

/**
 * The adapter's probe endpoints for Kubernetes (the JDK's HTTP server, one thread, no token):
 * {@code /healthz} answers 200 while the process serves requests (liveness), {@code /readyz} 200 while
 * {@code ready} holds (the pod watch is open) and 503 otherwise (readiness). Anything else is 404.
 */
public final class AdapterHealth implements AutoCloseable {
    private final HttpServer server;

    private AdapterHealth(HttpServer server) {
        this.server = server;
    }

    /** Serves the probes at {@code at} (port 0 picks a free one) until closed. */
    public static AdapterHealth start(InetSocketAddress at, BooleanSupplier ready) throws IOException {
        HttpServer s = HttpServer.create(at, 16);
        s.createContext("/", e -> {
            String path = e.getRequestURI().getPath();
            if (path.equals("/healthz")) {
                answer(e, 200, "ok");
            } else if (path.equals("/readyz")) {
                boolean r = ready.getAsBoolean();
                answer(e, r ? 200 : 503, r ? "watching" : "not watching pods");
            } else {
                answer(e, 404, "only /healthz and /readyz");
            }
        });
        s.start();
        return new AdapterHealth(s);
    }

    private static void answer(HttpExchange e, int status, String text) throws IOException {
        byte[] body = (text + "\n").getBytes(StandardCharsets.UTF_8);
        e.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        e.sendResponseHeaders(status, body.length);
        try (OutputStream out = e.getResponseBody()) {
            out.write(body);
        }
    }

    /** Where the probes are served. */
    public InetSocketAddress address() {
        return server.getAddress();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
