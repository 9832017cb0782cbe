package io.tenplex.bench;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.OffHeapBacking;
import io.tenplex.server.RestServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * REST transfers against raw TCP transfers of the same bytes on loopback, measured alternately in
 * one run: GET of a whole 256 MiB tensor, strided sub-tensor GETs (a range on dimension 1), and
 * uploads: replacing a tensor of the same size (the store recycles the replaced tensor's memory)
 * against raw TCP into reused and into fresh memory, and a store without a pool (fresh memory for
 * every upload) against raw TCP into fresh memory. Both sides use the same client code (a socket reading into a reused direct buffer), so the
 * client is not the bottleneck. Prints medians and ratios.
 *
 * <p>Usage: {@code java -XX:MaxDirectMemorySize=4g -cp bench/target/benchmarks.jar
 * io.tenplex.bench.RestTransferBench [rounds]}
 */
public final class RestTransferBench {
    private static final int MIB = 1 << 20;
    private static final long SIZE = 256L * MIB;
    private static final int SIDE = 8192; // f32 [8192, 8192] = 256 MiB

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 9;
        TensorMeta meta = TensorMeta.of(DType.F32, SIDE, SIDE);
        ByteBuffer payload = ByteBuffer.allocateDirect((int) SIZE);
        for (int i = 0; i < SIZE; i += 4) {
            payload.putInt(i, i * 2654435761L > 0 ? i : ~i);
        }
        try (TensorStore store = new TensorStore(new Allocator(3L << 30))) {
            BlobWriter w = BlobWriter.allocate(store.allocator(), SIZE, store.checksumBlock());
            w.append(payload.duplicate());
            store.putTensor(StorePath.parse("/w"), meta, w.take(), w.checksums(), false);
            RestServer rest = new RestServer(store, null);
            int port = rest.start("127.0.0.1", 0).getPort();
            TensorStore unpooled = new TensorStore(new Allocator(1L << 30, new OffHeapBacking(Allocator.MAX_CHUNK)));
            RestServer freshRest = new RestServer(unpooled, null);
            int freshPort = freshRest.start("127.0.0.1", 0).getPort();
            RawTcp raw = new RawTcp(payload);
            try {
                ByteBuffer sink = ByteBuffer.allocateDirect(4 * MIB);
                for (int i = 0; i < 2; i++) { // warm-up
                    get(port, "/api/v1/tensors/w", sink);
                    raw.download(SIZE, sink);
                    put(port, payload);
                    put(freshPort, payload);
                    raw.upload(payload, 'U');
                }
                report("GET whole tensor (256 MiB)", rounds, () -> get(port, "/api/v1/tensors/w", sink),
                        () -> raw.download(SIZE, sink));
                report("GET range :,0:4096 (128 MiB, 16 KiB runs)", rounds,
                        () -> get(port, "/api/v1/tensors/w?range=:,0:4096", sink), () -> raw.download(SIZE / 2, sink));
                report("GET range :,0:1024 (32 MiB, 4 KiB runs)", rounds,
                        () -> get(port, "/api/v1/tensors/w?range=:,0:1024", sink), () -> raw.download(SIZE / 8, sink));
                report("PUT tensor (256 MiB), recycled vs reused", rounds, () -> put(port, payload),
                        () -> raw.upload(payload, 'U'));
                report("PUT tensor, recycled vs raw into fresh", rounds, () -> put(port, payload),
                        () -> raw.upload(payload, 'F'));
                report("PUT tensor, both into fresh memory", rounds, () -> put(freshPort, payload),
                        () -> raw.upload(payload, 'F'));
            } finally {
                raw.close();
                rest.close();
                freshRest.close();
                unpooled.close();
            }
        }
    }

    interface Transfer {
        long run() throws IOException;
    }

    private static void report(String what, int rounds, Transfer ours, Transfer tcp) throws IOException {
        List<Double> a = new ArrayList<>();
        List<Double> b = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            a.add(rate(ours));
            b.add(rate(tcp));
        }
        double ma = median(a);
        double mb = median(b);
        System.out.printf(Locale.ROOT, "%-44s REST %6.2f GB/s   raw TCP %6.2f GB/s   ratio %.2f%n", what, ma, mb, ma / mb);
    }

    private static double rate(Transfer t) throws IOException {
        long start = System.nanoTime();
        long bytes = t.run();
        return bytes / ((System.nanoTime() - start) / 1e9) / 1e9;
    }

    private static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        s.sort(null);
        return s.get(s.size() / 2);
    }

    /** GETs a path on a new connection and reads the body into the sink; returns the body length. */
    static long get(int port, String path, ByteBuffer sink) throws IOException {
        try (SocketChannel ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", port))) {
            ch.write(ByteBuffer.wrap(("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.US_ASCII)));
            return readResponse(ch, sink, 200);
        }
    }

    static long put(int port, ByteBuffer payload) throws IOException {
        try (SocketChannel ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", port))) {
            String head = "PUT /api/v1/tensors/upload?dtype=u8&dims=" + payload.capacity() + "&replace=true HTTP/1.1\r\n"
                    + "Host: x\r\nContent-Length: " + payload.capacity() + "\r\n\r\n";
            ch.write(ByteBuffer.wrap(head.getBytes(StandardCharsets.US_ASCII)));
            ByteBuffer body = payload.duplicate().clear();
            while (body.hasRemaining()) {
                ch.write(body);
            }
            ByteBuffer sink = ByteBuffer.allocate(64 * 1024);
            readResponse(ch, sink, -1);
            return payload.capacity();
        }
    }

    /** Reads the head, checks the status (unless -1), then drains Content-Length bytes. */
    private static long readResponse(SocketChannel ch, ByteBuffer sink, int want) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(64 * 1024);
        int end;
        while (true) {
            if (ch.read(head) < 0) {
                throw new IOException("connection closed in the response head");
            }
            String s = new String(head.array(), 0, head.position(), StandardCharsets.ISO_8859_1);
            end = s.indexOf("\r\n\r\n");
            if (end >= 0) {
                String[] lines = s.substring(0, end).split("\r\n");
                int status = Integer.parseInt(lines[0].split(" ")[1]);
                if (want > 0 && status != want || want < 0 && status >= 300) {
                    throw new IOException("unexpected answer: " + lines[0] + " " + s.substring(end));
                }
                long len = 0;
                for (String l : lines) {
                    if (l.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                        len = Long.parseLong(l.substring(15).trim());
                    }
                }
                long got = head.position() - (end + 4);
                while (got < len) {
                    sink.clear();
                    int n = ch.read(sink);
                    if (n < 0) {
                        throw new IOException("connection closed after " + got + " of " + len + " bytes");
                    }
                    got += n;
                }
                return len;
            }
        }
    }

    /** A plain socket server that sends or receives raw bytes: the loopback ceiling for this JVM. */
    static final class RawTcp implements AutoCloseable {
        private static final sun.misc.Unsafe UNSAFE;

        static {
            try {
                java.lang.reflect.Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
                f.setAccessible(true);
                UNSAFE = (sun.misc.Unsafe) f.get(null);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final ServerSocketChannel server;
        private final ByteBuffer payload;
        private final ByteBuffer landing;
        private final Thread thread;

        RawTcp(ByteBuffer payload) throws IOException {
            this.payload = payload;
            this.landing = ByteBuffer.allocateDirect(payload.capacity());
            server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
            thread = new Thread(this::serve, "raw-tcp");
            thread.setDaemon(true);
            thread.start();
        }

        private void serve() {
            while (server.isOpen()) {
                try (SocketChannel c = server.accept()) {
                    ByteBuffer cmd = ByteBuffer.allocate(9);
                    while (cmd.hasRemaining() && c.read(cmd) >= 0) {
                        // request: 'D' + length to send, or 'U' + length to receive
                    }
                    cmd.flip();
                    byte op = cmd.get();
                    long n = cmd.getLong();
                    if (op == 'D') {
                        ByteBuffer out = payload.duplicate().clear().limit((int) n);
                        while (out.hasRemaining()) {
                            c.write(out);
                        }
                    } else {
                        // 'U' lands in reused memory; 'F' in freshly allocated memory, as a new tensor does
                        ByteBuffer in = op == 'U' ? landing.duplicate().clear().limit((int) n)
                                : ByteBuffer.allocateDirect((int) n);
                        while (in.hasRemaining() && c.read(in) >= 0) {
                            // receive into memory, as a store would
                        }
                        c.write(ByteBuffer.wrap(new byte[] {1}));
                        if (op == 'F') {
                            UNSAFE.invokeCleaner(in); // free now, as the store does, not at some later GC
                        }
                    }
                } catch (IOException e) {
                    if (server.isOpen()) {
                        e.printStackTrace();
                    }
                }
            }
        }

        private SocketChannel open(byte op, long n) throws IOException {
            SocketChannel ch = SocketChannel.open(server.getLocalAddress());
            ch.write(ByteBuffer.allocate(9).put(op).putLong(n).flip());
            return ch;
        }

        long download(long n, ByteBuffer sink) throws IOException {
            try (SocketChannel ch = open((byte) 'D', n)) {
                long got = 0;
                while (got < n) {
                    sink.clear();
                    int k = ch.read(sink);
                    if (k < 0) {
                        throw new IOException("raw server closed early");
                    }
                    got += k;
                }
                return n;
            }
        }

        long upload(ByteBuffer data, char op) throws IOException {
            try (SocketChannel ch = open((byte) op, data.capacity())) {
                ByteBuffer out = data.duplicate().clear();
                while (out.hasRemaining()) {
                    ch.write(out);
                }
                ch.read(ByteBuffer.allocate(1));
                return data.capacity();
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
