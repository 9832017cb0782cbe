package io.tenplex.jobs.common;

import java.net.InetSocketAddress;
import java.util.regex.Pattern;

/**
 * A daemon's address as requests and flags give it: {@code host:port}. Checked when it arrives, so that
 * a request naming {@code http://10.0.0.2:20010} (a URL, not an address) is refused before anything it
 * asks for is done, rather than failing later while other daemons are told of a seal.
 */
final class DaemonAddress {
    /** A host name, an IPv4 address, or an IPv6 address (bracketed or not): no scheme, path or user part. */
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._:\\[\\]-]{1,253}");
    private static final Pattern PORT = Pattern.compile("[1-9][0-9]{0,4}");

    private DaemonAddress() {
    }

    /** @throws IllegalArgumentException not {@code host:port} with a port from 1 to 65535 */
    static InetSocketAddress parse(String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        String host = colon < 0 ? "" : hostPort.substring(0, colon);
        String port = colon < 0 ? "" : hostPort.substring(colon + 1);
        if (!HOST.matcher(host).matches() || !PORT.matcher(port).matches() || Integer.parseInt(port) > 65535) {
            throw new IllegalArgumentException("daemon address '" + hostPort + "' is not host:port (e.g. 10.0.0.2:20010,"
                    + " with no scheme or path)");
        }
        return new InetSocketAddress(host, Integer.parseInt(port));
    }
}
