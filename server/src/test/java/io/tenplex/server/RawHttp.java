package io.tenplex.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** A minimal HTTP/1.1 client over one socket, to prove that a connection survives bad requests. */
public final class RawHttp implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    public record Response(int status, Map<String, String> headers, byte[] body) {
        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    public RawHttp(int port) throws IOException {
        socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(30_000);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    public Response send(String method, String target, Map<String, String> headers, byte[] body) throws IOException {
        StringBuilder b = new StringBuilder(method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n");
        headers.forEach((k, v) -> b.append(k).append(": ").append(v).append("\r\n"));
        if (body != null) {
            b.append("Content-Length: ").append(body.length).append("\r\n");
        }
        b.append("\r\n");
        out.write(b.toString().getBytes(StandardCharsets.ISO_8859_1));
        if (body != null) {
            out.write(body);
        }
        out.flush();
        return read();
    }

    /** Sends bytes exactly as given (request line, headers and body) and reads one response. */
    public Response raw(String request) throws IOException {
        out.write(request.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        return read();
    }

    public Response read() throws IOException {
        Response r = readOrNull(false);
        if (r == null) {
            throw new IOException("connection closed by server");
        }
        return r;
    }

    /**
     * Reads one response (skipping {@code 100 Continue}), or null when the connection ends before a
     * status line. The body is framed by Content-Length, chunked encoding, or the end of the
     * connection; an answer to HEAD ({@code head}) and 204/304 have none.
     */
    public Response readOrNull(boolean head) throws IOException {
        while (true) {
            String status = line();
            if (status == null) {
                return null;
            }
            String[] parts = status.split(" ");
            if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
                throw new IOException("not an HTTP status line: " + status);
            }
            Map<String, String> h = new LinkedHashMap<>();
            String l;
            while ((l = line()) != null && !l.isEmpty()) {
                int c = l.indexOf(':');
                h.put(l.substring(0, c).trim().toLowerCase(Locale.ROOT), l.substring(c + 1).trim());
            }
            int code = Integer.parseInt(parts[1]);
            if (code == 100) {
                continue;
            }
            if (head || code == 204 || code == 304) {
                return new Response(code, h, new byte[0]);
            }
            return new Response(code, h, body(h));
        }
    }

    private byte[] body(Map<String, String> h) throws IOException {
        if (h.getOrDefault("transfer-encoding", "").toLowerCase(Locale.ROOT).contains("chunked")) {
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            long n;
            while ((n = Long.parseLong(line().split(";")[0].trim(), 16)) > 0) {
                all.writeBytes(in.readNBytes((int) n));
                line();
            }
            line();
            return all.toByteArray();
        }
        String len = h.get("content-length");
        return len == null ? in.readAllBytes() : in.readNBytes(Integer.parseInt(len));
    }

    private String line() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\n') {
                String s = b.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            b.write(c);
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }

    /** Writes bytes as they are, reading nothing. */
    public void write(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    /** Reads at most {@code n} bytes, as many as one read gives. */
    public int readSome(int n) throws IOException {
        return in.read(new byte[n]);
    }

    /** Reads until the server closes the connection; returns how many bytes came before the end. */
    public long drainUntilClosed() throws IOException {
        long n = 0;
        byte[] buf = new byte[1 << 16];
        int r;
        try {
            while ((r = in.read(buf)) != -1) {
                n += r;
            }
        } catch (java.net.SocketException e) {
            // a reset is a close too
        }
        return n;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
