package io.tenplex.daemon;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback TCP proxy in front of one daemon that injects one network fault into the first
 * sub-tensor read ({@code GET /api/v1/tensors/...}) it carries; everything else passes untouched.
 * {@link Mode#CORRUPT} flips the first body byte of that read's response (bytes damaged in
 * transit); {@link Mode#HOLD} stops forwarding that request and signals {@link #held}, so a test
 * knows a transfer is in flight. This is the test's edge: the daemons on both sides are real.
 */
final class FaultProxy implements AutoCloseable {
    enum Mode { CORRUPT, HOLD }

    private static final byte[] TENSOR_GET = "GET /api/v1/tensors/".getBytes(StandardCharsets.US_ASCII);

    private final ServerSocket server;
    private final InetSocketAddress target;
    private final Mode mode;
    private final AtomicBoolean fired = new AtomicBoolean();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    final CountDownLatch held = new CountDownLatch(1);
    final AtomicInteger flipped = new AtomicInteger();

    FaultProxy(InetSocketAddress target, Mode mode) throws IOException {
        this.target = target;
        this.mode = mode;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread accept = new Thread(this::accept, "fault-proxy-accept");
        accept.setDaemon(true);
        accept.start();
    }

    int port() {
        return server.getLocalPort();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(target.getAddress(), target.getPort());
                sockets.add(client);
                sockets.add(upstream);
                AtomicBoolean armed = new AtomicBoolean(); // the next response on this connection gets the fault
                start(() -> pump(client, upstream, true, armed));
                start(() -> pump(upstream, client, false, armed));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private static void start(Runnable r) {
        Thread t = new Thread(r, "fault-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private void pump(Socket from, Socket to, boolean request, AtomicBoolean armed) {
        byte[] buf = new byte[64 << 10];
        boolean flipNext = false;
        boolean holding = false;
        try {
            InputStream in = from.getInputStream(); // not closed here: closing a socket's stream closes the socket
            OutputStream out = to.getOutputStream();
            int n;
            while ((n = in.read(buf)) > 0) {
                if (request && indexOf(buf, n, TENSOR_GET, 0) >= 0 && fired.compareAndSet(false, true)) {
                    if (mode == Mode.HOLD) {
                        holding = true;
                        held.countDown();
                        return; // never forwarded; the connection stays open until close()
                    }
                    armed.set(true);
                }
                if (!request && (armed.get() || flipNext)) {
                    int at = flipNext ? 0 : indexOf(buf, n, "\r\n\r\n".getBytes(StandardCharsets.US_ASCII), 0);
                    if (at >= 0) {
                        int body = flipNext ? 0 : at + 4;
                        armed.set(false);
                        if (body < n) {
                            buf[body] ^= 0x5a;
                            flipped.incrementAndGet();
                            flipNext = false;
                        } else {
                            flipNext = true; // the body starts in the next read
                        }
                    }
                }
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // a side closed
        } finally {
            if (!holding) {
                closeQuietly(from);
                closeQuietly(to);
            }
        }
    }

    private static int indexOf(byte[] buf, int n, byte[] what, int from) {
        outer:
        for (int i = from; i + what.length <= n; i++) {
            for (int j = 0; j < what.length; j++) {
                if (buf[i + j] != what[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            // already closed
        }
        sockets.forEach(FaultProxy::closeQuietly);
    }
}
