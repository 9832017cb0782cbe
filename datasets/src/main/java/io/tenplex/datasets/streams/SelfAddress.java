package io.tenplex.datasets.streams;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.function.Predicate;

/** Whether a {@code host:port} names this daemon: its port at one of this host's addresses. */
final class SelfAddress implements Predicate<String> {
    private final String self;
    private final int port;
    private final java.util.Map<String, Boolean> known = new java.util.concurrent.ConcurrentHashMap<>();

    SelfAddress(String host, int port) {
        this.self = host + ":" + port;
        this.port = port;
    }

    @Override
    public boolean test(String addr) {
        return addr.equals(self) || known.computeIfAbsent(addr, this::local);
    }

    private boolean local(String addr) {
        int colon = addr.lastIndexOf(':');
        if (colon <= 0 || !addr.substring(colon + 1).equals(Integer.toString(port))) {
            return false;
        }
        try {
            InetAddress a = InetAddress.getByName(addr.substring(0, colon));
            return a.isLoopbackAddress() || a.isAnyLocalAddress() || NetworkInterface.getByInetAddress(a) != null;
        } catch (UnknownHostException | SocketException e) {
            return false;
        }
    }
}
