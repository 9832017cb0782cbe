package io.tenplex.server;

import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.util.AttributeKey;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends a tensor read no faster than the reader asked with {@code x-tenplex-pace: <bytes/s>}, by
 * setting the kernel's pacing cap ({@code SO_MAX_PACING_RATE}) on the connection, so the bytes leave
 * evenly spaced rather than in bursts. A later read on the same connection without the header lifts
 * the cap. Readers pace the flows of a reconfiguration so that they finish together. Where the socket
 * cannot be paced (no native transport) the read is served unpaced and that is logged once.
 */
final class Pacing {
    static final String HEADER = "x-tenplex-pace";
    private static final Logger LOG = LoggerFactory.getLogger(Pacing.class);
    /** setsockopt(SOL_SOCKET, SO_MAX_PACING_RATE): bytes per second, ~0 for none. */
    private static final ChannelOption<Integer> MAX_PACING_RATE =
            new IntegerUnixChannelOption("SO_MAX_PACING_RATE", 1, 47);
    private static final int UNLIMITED = -1; // ~0U
    private static final AttributeKey<Boolean> PACED = AttributeKey.valueOf("tenplex.paced");
    private static final AtomicBoolean WARNED = new AtomicBoolean();

    private Pacing() {
    }

    /** Applies the request's pace to its connection (or lifts an earlier one); a malformed header is a 400. */
    static void apply(Exchange ex) {
        String header = ex.header(HEADER);
        Channel ch = ex.ctx.channel();
        if (header == null) {
            if (ch.attr(PACED).getAndSet(null) != null) {
                set(ch, UNLIMITED);
            }
            return;
        }
        long pace;
        try {
            pace = Long.parseLong(header.trim());
        } catch (NumberFormatException e) {
            pace = -1;
        }
        if (pace <= 0) {
            throw HttpError.badRequest(HEADER + " must be a positive number of bytes per second, got '" + header + "'");
        }
        if (set(ch, (int) Math.min(pace, 0xFFFF_FFFEL))) {
            ch.attr(PACED).set(Boolean.TRUE);
        }
    }

    private static boolean set(Channel ch, int value) {
        boolean done;
        try {
            done = ch.config().setOption(MAX_PACING_RATE, value);
        } catch (RuntimeException e) {
            done = false;
        }
        if (!done && WARNED.compareAndSet(false, true)) {
            LOG.warn("cannot pace sends on {} connections; paced reads are served unpaced", ch.getClass().getSimpleName());
        }
        return done;
    }
}
