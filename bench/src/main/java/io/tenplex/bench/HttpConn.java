package io.tenplex.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A minimal HTTP/1.1 client on one kept-alive loopback connection: requests with a body sent from a
 * direct buffer, answers read into reused buffers. Small and allocation-light so that the client is
 * not what a benchmark measures.
 */
final class HttpConn implements AutoCloseable {
    private final int port;
    private final ByteBuffer head = ByteBuffer.allocateDirect(64 * 1024);
    private final byte[] headBytes = new byte[64 * 1024];
    private final ByteBuffer scratch = ByteBuffer.allocateDirect(1 << 20);
    private ByteBuffer readBack = ByteBuffer.allocateDirect(0);
    private SocketChannel ch;

    HttpConn(int port) throws IOException {
        this.port = port;
        this.ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
    }

    /** PUTs bytes {@code [off, off+len)} of {@code data} as a u8 tensor, replacing; returns len. */
    long putTensor(String path, ByteBuffer data, int off, int len) throws IOException {
        send("PUT " + path + "?dtype=u8&dims=" + len + "&replace=true", "", data.slice(off, len));
        answer(null, 0, 0, 200, 201);
        return len;
    }

    long postTar(String prefix, ByteBuffer tar) throws IOException {
        send("POST /upload?prefix=" + prefix + "&replace=true", "Content-Type: application/x-tar\r\n", tar.duplicate().clear());
        answer(null, 0, 0, 200, 200);
        return tar.capacity();
    }

    void delete(String path) throws IOException {
        send("DELETE " + path + "?recursive=true", "", ByteBuffer.allocate(0));
        answer(null, 0, 0, 200, 404);
    }

    /** GETs a tensor and compares it with bytes {@code [off, off+len)} of {@code want}. */
    void verify(String path, ByteBuffer want, int off, int len) throws IOException {
        send("GET " + path, "", null);
        if (readBack.capacity() < len) {
            readBack = ByteBuffer.allocateDirect(len);
        }
        answer(readBack, 0, len, 200, 200);
        if (readBack.slice(0, len).mismatch(want.slice(off, len)) >= 0) {
            throw new IllegalStateException(path + " read back differs from what was uploaded");
        }
    }

    private void send(String line, String headers, ByteBuffer body) throws IOException {
        String h = line + " HTTP/1.1\r\nHost: x\r\n" + headers
                + (body == null ? "" : "Content-Length: " + body.remaining() + "\r\n") + "\r\n";
        ByteBuffer hb = ByteBuffer.wrap(h.getBytes(StandardCharsets.US_ASCII));
        if (body != null && body.remaining() <= 64 * 1024) {
            ch.write(new ByteBuffer[] {hb, body.duplicate()}); // one write: as a client with a small body sends it
            return;
        }
        while (hb.hasRemaining()) {
            ch.write(hb);
        }
        ByteBuffer b = body == null ? ByteBuffer.allocate(0) : body.duplicate();
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /**
     * Reads one answer; its status must be {@code okA} or {@code okB}. The body goes into {@code into}
     * at {@code at} (when given, and it must be {@code len} bytes), else is dropped.
     */
    private void answer(ByteBuffer into, int at, int len, int okA, int okB) throws IOException {
        head.clear();
        int end;
        while ((end = headEnd()) < 0) {
            if (ch.read(head) < 0) {
                throw new IOException("connection closed in an answer's head");
            }
        }
        String s = new String(headBytes, 0, end, StandardCharsets.ISO_8859_1);
        String[] lines = s.split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        long length = 0;
        for (String l : lines) {
            if (l.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                length = Long.parseLong(l.substring(15).trim());
            }
        }
        if (status != okA && status != okB) {
            throw new IOException("unexpected answer: " + lines[0]);
        }
        if (into != null && length != len) {
            throw new IOException("answer has " + length + " bytes, expected " + len);
        }
        ByteBuffer rest = head.flip().position(end + 4);
        long got = 0;
        ByteBuffer dst = into != null ? into.slice(at, len) : null;
        while (got < length) {
            ByteBuffer target = dst != null ? dst : scratch.clear().limit((int) Math.min(scratch.capacity(), length - got));
            int n;
            if (rest.hasRemaining()) {
                n = Math.min(rest.remaining(), target.remaining());
                target.put(target.position(), rest, rest.position(), n).position(target.position() + n);
                rest.position(rest.position() + n);
            } else if ((n = ch.read(target)) < 0) {
                throw new IOException("connection closed after " + got + " of " + length + " bytes");
            }
            got += n;
        }
        if (rest.hasRemaining()) {
            throw new IOException("unexpected bytes after an answer");
        }
    }

    /** The end of the head read so far (index of CRLFCRLF), or -1. */
    private int headEnd() {
        int n = head.position();
        head.get(0, headBytes, 0, n);
        for (int i = 3; i < n; i++) {
            if (headBytes[i] == '\n' && headBytes[i - 1] == '\r' && headBytes[i - 2] == '\n' && headBytes[i - 3] == '\r') {
                return i - 3;
            }
        }
        return -1;
    }

    int port() {
        return port;
    }

    @Override
    public void close() throws IOException {
        ch.close();
    }
}
