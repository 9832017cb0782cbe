package io.tenplex.daemon;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A loopback TCP proxy in front of one daemon that, once {@link #holdNextAnswer armed}, holds the
 * next answer the daemon writes: the daemon's write has succeeded (the proxy read every byte), yet
 * nothing reaches the client until {@link #release}. It signals {@link #reacted} when the client of
 * the held answer does something more: closes that connection, or sends another request on a new
 * one. Everything else passes untouched. This is the test's edge: the daemons on both sides are real.
 */
final class HoldingProxy implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress target;
    private final AtomicBoolean armed = new AtomicBoolean();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile CountDownLatch release = new CountDownLatch(0);
    private volatile boolean holdingOne;
    final CountDownLatch held = new CountDownLatch(1);
    final CountDownLatch reacted = new CountDownLatch(1);

    /** Listens at {@code host}:{@code port} (e.g. another loopback address with the daemon's port). */
    HoldingProxy(InetAddress host, int port, InetSocketAddress target) throws IOException {
        this.target = target;
        this.server = new ServerSocket(port, 50, host);
        Thread accept = new Thread(this::accept, "holding-proxy-accept");
        accept.setDaemon(true);
        accept.start();
    }

    /** The next answer any connection carries is held until {@link #release}. */
    void holdNextAnswer() {
        release = new CountDownLatch(1);
        armed.set(true);
    }

    /** Lets the held answer go on (lost if its client closed the connection meanwhile). */
    void release() {
        release.countDown();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(target.getAddress(), target.getPort());
                sockets.add(client);
                sockets.add(upstream);
                AtomicBoolean mine = new AtomicBoolean();
                start(() -> pump(client, upstream, () -> {
                    if (mine.get()) {
                        reacted.countDown(); // the client of the held answer closed its connection
                    }
                }, null, mine));
                start(() -> pump(upstream, client, () -> { }, mine, mine));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void pump(Socket from, Socket to, Runnable ended, AtomicBoolean answers, AtomicBoolean mine) {
        byte[] buf = new byte[64 << 10];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            int n;
            while ((n = in.read(buf)) > 0) {
                if (answers == null && holdingOne && !mine.get()) {
                    reacted.countDown(); // another request while an answer is held
                }
                if (answers != null && armed.compareAndSet(true, false)) {
                    answers.set(true);
                    holdingOne = true;
                    held.countDown();
                    release.await();
                }
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // a side closed
        } finally {
            ended.run();
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void start(Runnable r) {
        Thread t = new Thread(r, "holding-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing
        }
    }

    @Override
    public void close() {
        release.countDown();
        closeQuietly(server);
        sockets.forEach(HoldingProxy::closeQuietly);
    }

    private static void closeQuietly(ServerSocket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing
        }
    }
}
