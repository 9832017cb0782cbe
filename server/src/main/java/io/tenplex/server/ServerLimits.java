package io.tenplex.server;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * The REST server's timeouts and limits, in one validated value.
 *
 * @param idle a connection waiting for its next request with nothing received is closed after this
 * @param head a request head (line and headers) must be complete this long after its first byte,
 *     else 408 and the connection closes (slow clients)
 * @param body a request body that receives nothing for this long is abandoned: 408, its reserved
 *     memory is released and the connection closes (stalled uploads)
 * @param write a response write that makes no progress for this long closes the connection (readers
 *     that stop reading), which releases what the response held
 * @param controlBody the largest body of a control route (JSON or protobuf), collected in the heap
 * @param controlInFlight the most bytes of control bodies collected at once over all connections;
 *     beyond it requests get 429
 * @param allowedOrigins browser origins (as in the {@code Origin} header) allowed to call the
 *     daemon; a request from any other origin gets 403. None by default.
 */
public record ServerLimits(Duration idle, Duration head, Duration body, Duration write, int controlBody,
        long controlInFlight, List<String> allowedOrigins) {

    public static final ServerLimits DEFAULTS = new ServerLimits(Duration.ofSeconds(120), Duration.ofSeconds(30),
            Duration.ofSeconds(60), Duration.ofSeconds(120), 16 << 20, 64L << 20, List.of());

    public ServerLimits {
        positive("idle timeout", idle);
        positive("head timeout", head);
        positive("body timeout", body);
        positive("write timeout", write);
        if (controlBody < 1 || controlInFlight < controlBody) {
            throw new IllegalArgumentException("control body limit " + controlBody + " must be >= 1 and at most the "
                    + "in-flight limit " + controlInFlight);
        }
        allowedOrigins = allowedOrigins.stream().map(o -> o.trim().toLowerCase(Locale.ROOT)).toList();
    }

    private static void positive(String what, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(what + " must be positive, got " + d);
        }
    }

    public ServerLimits withTimeouts(Duration idle, Duration head, Duration body, Duration write) {
        return new ServerLimits(idle, head, body, write, controlBody, controlInFlight, allowedOrigins);
    }

    public ServerLimits withAllowedOrigins(List<String> origins) {
        return new ServerLimits(idle, head, body, write, controlBody, controlInFlight, origins);
    }
}
