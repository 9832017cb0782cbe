package io.tenplex.store.data;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reads sample bytes from where the index says they live: a local path, a {@code file://} URL, or an
 * {@code http(s)://} URL (one range GET per read). Thread-safe; close it to close the files.
 */
final class SourceReader implements AutoCloseable {
    private final Map<String, FileChannel> files = new ConcurrentHashMap<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10))
            .followRedirects(HttpClient.Redirect.NORMAL).build();

    static boolean isHttp(String url) {
        return url.startsWith("http://") || url.startsWith("https://");
    }

    static Path localPath(String url) {
        return url.startsWith("file://") ? Path.of(URI.create(url)) : Path.of(url);
    }

    /** Checks that a local file exists and holds at least {@code end} bytes (HTTP URLs are not checked). */
    static void check(String url, long end) {
        if (isHttp(url)) {
            return;
        }
        Path p;
        try {
            p = localPath(url);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("bad dataset file url '" + url + "': " + e.getMessage());
        }
        long size;
        try {
            size = Files.size(p);
        } catch (IOException e) {
            throw new IllegalArgumentException("dataset file " + p + " is not readable: " + e);
        }
        if (size < end) {
            throw new IllegalArgumentException("dataset file " + p + " has " + size + " bytes but the index reads up to "
                    + end);
        }
    }

    /** Fills {@code dst} (exactly its remaining bytes) from {@code url} starting at {@code begin}. */
    void read(String url, long begin, ByteBuffer dst) throws IOException {
        if (!dst.hasRemaining()) {
            return;
        }
        if (isHttp(url)) {
            readHttp(url, begin, dst);
            return;
        }
        FileChannel ch = files.computeIfAbsent(url, u -> {
            try {
                return FileChannel.open(localPath(u), StandardOpenOption.READ);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        long pos = begin;
        while (dst.hasRemaining()) {
            int n = ch.read(dst, pos);
            if (n < 0) {
                throw new IOException(url + " ends before byte " + pos);
            }
            pos += n;
        }
    }

    private void readHttp(String url, long begin, ByteBuffer dst) throws IOException {
        long end = begin + dst.remaining() - 1;
        HttpRequest req = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofMinutes(2))
                .header("Range", "bytes=" + begin + "-" + end).build();
        HttpResponse<byte[]> resp;
        try {
            resp = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted reading " + url);
        }
        byte[] body = resp.body();
        if (resp.statusCode() == 206 && body.length == dst.remaining()) {
            dst.put(body);
        } else if (resp.statusCode() == 200 && body.length > end) {
            dst.put(body, (int) begin, dst.remaining()); // the server ignored the range
        } else {
            throw new IOException("GET " + url + " bytes " + begin + "-" + end + ": status " + resp.statusCode() + ", "
                    + body.length + " bytes");
        }
    }

    @Override
    public void close() {
        for (FileChannel ch : files.values()) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // read-only files: nothing to flush
            }
        }
        files.clear();
    }
}
