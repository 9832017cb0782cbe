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
 * knows a transfer is in flight. {@link Mode#STRIP_AND_CORRUPT} damages every answer that carries
 * {@code x-tensor-crc32c}: it removes that header and flips the first body byte (a proxy that hides
 * the damage). This is the test's edge: the daemons on both sides are real.
 */
public final class FaultProxy implements AutoCloseable {
    public enum Mode { CORRUPT, HOLD, STRIP_AND_CORRUPT }

    private static final byte[] TENSOR_GET = "GET /api/v1/tensors/".getBytes(StandardCharsets.US_ASCII);

    private final ServerSocket server;
    private final InetSocketAddress target;
    private final Mode mode;
    private final AtomicBoolean fired = new AtomicBoolean();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    final CountDownLatch held = new CountDownLatch(1);
    final AtomicInteger flipped = new AtomicInteger();

    public FaultProxy(InetSocketAddress target, Mode mode) throws IOException {
        this.target = target;
        this.mode = mode;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread accept = new Thread(this::accept, "fault-proxy-accept");
        accept.setDaemon(true);
        accept.start();
    }

    public int port() {
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
                start(() -> {
                    if (mode == Mode.STRIP_AND_CORRUPT) {
                        stripAndCorrupt(upstream, client);
                    } else {
                        pump(upstream, client, false, armed);
                    }
                });
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

    /** Forwards answers one by one (heads parsed, bodies by Content-Length), damaging those with a checksum. */
    private void stripAndCorrupt(Socket from, Socket to) {
        try {
            java.io.BufferedInputStream in = new java.io.BufferedInputStream(from.getInputStream());
            OutputStream out = to.getOutputStream();
            for (String head; (head = readHead(in)) != null; ) {
                long length = 0;
                boolean damage = false;
                StringBuilder kept = new StringBuilder();
                for (String line : head.split("\r\n")) {
                    String lower = line.toLowerCase(java.util.Locale.ROOT);
                    if (lower.startsWith("x-tensor-crc32c:")) {
                        damage = true;
                        continue;
                    }
                    if (lower.startsWith("content-length:")) {
                        length = Long.parseLong(line.substring(15).trim());
                    }
                    kept.append(line).append("\r\n");
                }
                out.write(kept.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
                byte[] buf = new byte[64 << 10];
                for (long left = length; left > 0; ) {
                    int n = in.read(buf, 0, (int) Math.min(buf.length, left));
                    if (n < 0) {
                        return;
                    }
                    if (left == length && damage) {
                        buf[0] ^= 0x5a;
                        flipped.incrementAndGet();
                    }
                    out.write(buf, 0, n);
                    left -= n;
                }
                out.flush();
            }
        } catch (IOException e) {
            // a side closed
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    /** One answer's head without its final empty line, or null at the end of the stream. */
    private static String readHead(InputStream in) throws IOException {
        java.io.ByteArrayOutputStream head = new java.io.ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0) {
            head.write(b);
            byte[] h = head.toByteArray();
            int n = h.length;
            if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
                return new String(h, 0, n - 4, StandardCharsets.ISO_8859_1);
            }
        }
        return null;
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
