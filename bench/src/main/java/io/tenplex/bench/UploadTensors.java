package io.tenplex.bench;


import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * Uploads {@code count} tensors of {@code mib} MiB each to a running daemon (for the RSS benchmark).
 * Usage: {@code UploadTensors <port> <count> <mib>}.
 */
public final class UploadTensors {
    public static void main(String[] args) throws IOException {
        int port = Integer.parseInt(args[0]);
        int count = Integer.parseInt(args[1]);
        int bytes = Integer.parseInt(args[2]) << 20;
        ByteBuffer payload = ByteBuffer.allocateDirect(bytes);
        for (int i = 0; i < bytes; i += 8) {
            payload.putLong(i, i * 0x9E3779B97F4A7C15L);
        }
        for (int t = 0; t < count; t++) {
            try (SocketChannel ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", port))) {
                String head = "PUT /api/v1/tensors/rss/t" + t + "?dtype=u8&dims=" + bytes + " HTTP/1.1\r\nHost: x\r\n"
                        + "Content-Length: " + bytes + "\r\n\r\n";
                ch.write(ByteBuffer.wrap(head.getBytes(StandardCharsets.US_ASCII)));
                ByteBuffer body = payload.duplicate().clear();
                while (body.hasRemaining()) {
                    ch.write(body);
                }
                ByteBuffer answer = ByteBuffer.allocate(4096);
                ch.read(answer);
                String status = new String(answer.array(), 0, answer.position(), StandardCharsets.US_ASCII);
                if (!status.startsWith("HTTP/1.1 201")) {
                    throw new IOException("upload " + t + " failed: " + status);
                }
            }
        }
        System.out.println("uploaded " + count + " x " + (bytes >> 20) + " MiB");
    }
}
