package io.tenplex.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * The physical limit of an upload on this machine: a plain socket server receiving messages into
 * preallocated memory and answering each with one byte, and its client on one kept-alive
 * connection. A message of {@code n} bytes is announced by its 4-byte length.
 */
final class RawReceiver implements AutoCloseable {
    private final ServerSocketChannel server;
    private final ByteBuffer landing;
    private final Thread thread;
    private final SocketChannel client;
    private final ByteBuffer ack = ByteBuffer.allocateDirect(1);
    private final ByteBuffer len = ByteBuffer.allocateDirect(4);

    RawReceiver(int capacity) throws IOException {
        landing = ByteBuffer.allocateDirect(capacity);
        server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
        thread = new Thread(this::serve, "raw-receive");
        thread.setDaemon(true);
        thread.start();
        client = SocketChannel.open(server.getLocalAddress());
        client.socket().setTcpNoDelay(true);
    }

    private void serve() {
        try (SocketChannel c = server.accept()) {
            c.socket().setTcpNoDelay(true);
            ByteBuffer n = ByteBuffer.allocateDirect(4);
            ByteBuffer one = ByteBuffer.allocateDirect(1);
            int at = 0;
            while (true) {
                n.clear();
                while (n.hasRemaining()) {
                    if (c.read(n) < 0) {
                        return;
                    }
                }
                int size = n.getInt(0);
                if (at + size > landing.capacity()) {
                    at = 0;
                }
                ByteBuffer in = landing.duplicate().clear().position(at).limit(at + size);
                while (in.hasRemaining()) {
                    if (c.read(in) < 0) {
                        return;
                    }
                }
                at += size;
                c.write(one.clear());
            }
        } catch (IOException e) {
            if (server.isOpen()) {
                e.printStackTrace();
            }
        }
    }

    /**
     * Sends {@code count} messages of {@code size} bytes from {@code data}, each answered before the
     * next; returns the bytes sent. Checks the landed bytes of the last message (outside what a
     * caller should time only when it matters: the check is a memory compare).
     */
    long receive(ByteBuffer data, int size, int count) throws IOException {
        for (int i = 0; i < count; i++) {
            ByteBuffer body = data.slice((int) ((long) i * size % data.capacity()), size);
            len.clear().putInt(0, size);
            if (size <= 64 * 1024) {
                client.write(new ByteBuffer[] {len, body});
            } else {
                client.write(len);
            }
            while (body.hasRemaining() || len.hasRemaining()) {
                client.write(new ByteBuffer[] {len, body});
            }
            ack.clear();
            while (ack.hasRemaining()) {
                if (client.read(ack) < 0) {
                    throw new IOException("raw receiver closed");
                }
            }
        }
        return (long) size * count;
    }

    /** The landing memory, for a check that the bytes arrived. */
    ByteBuffer landing() {
        return landing;
    }

    @Override
    public void close() throws IOException {
        client.close();
        server.close();
    }
}
