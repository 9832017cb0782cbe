package io.tenplex.server.peer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP relay in front of one server that keeps a copy of every byte the clients sent:
 * what an observer on the network would see. The test's edge; both ends are real.
 */
public final class RecordingRelay implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress target;
    private final ByteArrayOutputStream seen = new ByteArrayOutputStream();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();

    public RecordingRelay(InetSocketAddress target) throws IOException {
        this.target = target;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        daemon(this::accept);
    }

    public InetSocketAddress address() {
        return new InetSocketAddress("127.0.0.1", server.getLocalPort());
    }

    /** Every byte clients sent so far. */
    public byte[] sent() {
        synchronized (seen) {
            return seen.toByteArray();
        }
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(target.getAddress(), target.getPort());
                sockets.add(client);
                sockets.add(upstream);
                daemon(() -> pump(client, upstream, true));
                daemon(() -> pump(upstream, client, false));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void pump(Socket from, Socket to, boolean record) {
        byte[] buf = new byte[64 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) > 0) {
                if (record) {
                    synchronized (seen) {
                        seen.write(buf, 0, n);
                    }
                }
                out.write(buf, 0, n);
            }
        } catch (IOException e) {
            // one side closed
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void daemon(Runnable r) {
        Thread t = new Thread(r, "recording-relay");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }
}
