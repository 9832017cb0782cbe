package io.tenplex.jobs;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Map;
import java.util.OptionalInt;

/** Which worker of the cluster a daemon is: the entry of its peers at its own address. */
public final class SelfWorker {
    private SelfWorker() {
    }

    /** The {@code host:port} other daemons reach a daemon bound to {@code address} at (this host's address for any). */
    public static String address(InetSocketAddress address) {
        String host = address.getAddress() != null && address.getAddress().isAnyLocalAddress() ? localHost()
                : address.getHostString();
        return host + ":" + address.getPort();
    }

    private static String localHost() {
        try {
            return InetAddress.getLocalHost().getHostAddress();
        } catch (java.net.UnknownHostException e) {
            return "127.0.0.1";
        }
    }

    /**
     * The worker whose address is {@code self} ({@code host:port}); else the only one on the same port
     * at an address of this host (a daemon bound to every interface); else empty.
     */
    public static OptionalInt find(String self, Map<Integer, InetSocketAddress> daemons) {
        int colon = self.lastIndexOf(':');
        if (colon < 0) {
            return OptionalInt.empty();
        }
        int port = Integer.parseInt(self.substring(colon + 1));
        OptionalInt local = OptionalInt.empty();
        int locals = 0;
        for (Map.Entry<Integer, InetSocketAddress> e : daemons.entrySet()) {
            InetSocketAddress a = e.getValue();
            if ((a.getHostString() + ":" + a.getPort()).equals(self)) {
                return OptionalInt.of(e.getKey());
            }
            if (a.getPort() == port && isLocal(a.getAddress())) {
                local = OptionalInt.of(e.getKey());
                locals++;
            }
        }
        return locals == 1 ? local : OptionalInt.empty();
    }

    private static boolean isLocal(InetAddress a) {
        if (a == null) {
            return false;
        }
        if (a.isLoopbackAddress() || a.isAnyLocalAddress()) {
            return true;
        }
        try {
            return NetworkInterface.getByInetAddress(a) != null;
        } catch (SocketException e) {
            return false;
        }
    }
}
