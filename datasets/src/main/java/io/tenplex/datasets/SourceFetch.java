package io.tenplex.datasets;

import io.tenplex.store.StoreException;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * One blocking HTTP GET of a dataset source, for a worker thread (never an event loop): connect and
 * read timeouts from the {@link SourcePolicy}, an overall deadline of {@link #DEADLINE_READS} read
 * timeouts, redirects not followed, and a cap on the bytes taken. Failures are a 504 (no answer in
 * time) or a 502 (any other upstream failure); their messages name the URL and the status, never
 * the answer's content.
 */
final class SourceFetch {
    /** The whole fetch must end within this many read timeouts. */
    static final int DEADLINE_READS = 10;

    private final SourcePolicy policy;

    SourceFetch(SourcePolicy policy) {
        this.policy = policy;
    }

    /** The whole body of a 200 answer, at most {@code max} bytes. */
    /**
     * The whole body, at most {@code max} bytes.
     *
     * @param held told the heap the read holds before it grows (three times the bytes: the growing
     *     buffer and the copy returned); it may throw to stop the read
     */
    byte[] getAll(URI url, int max, java.util.function.LongConsumer held) {
        HttpURLConnection c = open(url, null);
        boolean reuse = false; // a body read to its end leaves the connection to the JDK's keep-alive cache
        try {
            int status = status(c, url);
            if (status != 200) {
                throw upstream(url, "status " + status);
            }
            long length = c.getContentLengthLong();
            if (length > max) {
                throw tooLarge(url, length, max);
            }
            held.accept(3 * Math.max(length, 0));
            byte[] body = read(c, url, max + 1, held);
            if (body.length > max) {
                throw tooLarge(url, body.length, max);
            }
            reuse = true;
            return body;
        } finally {
            if (!reuse) {
                c.disconnect();
            }
        }
    }

    /** Fills {@code dst} (exactly its remaining bytes) from byte {@code begin} with a range GET. */
    void getRange(URI url, long begin, ByteBuffer dst) throws IOException {
        long end = begin + dst.remaining() - 1;
        HttpURLConnection c = open(url, "bytes=" + begin + "-" + end);
        boolean reuse = false;
        try {
            int status = status(c, url);
            if (status != 200 && status != 206) {
                throw new IOException("GET " + url + " bytes " + begin + "-" + end + ": status " + status);
            }
            long deadline = deadline();
            try (InputStream in = c.getInputStream()) {
                if (status == 200) {
                    in.skipNBytes(begin); // the server ignored the range
                }
                byte[] buf = new byte[(int) Math.min(dst.remaining(), 1 << 16)];
                while (dst.hasRemaining()) {
                    checkDeadline(url, deadline);
                    int n = in.read(buf, 0, Math.min(buf.length, dst.remaining()));
                    if (n < 0) {
                        throw new IOException("GET " + url + " bytes " + begin + "-" + end + ": the answer ends early");
                    }
                    dst.put(buf, 0, n);
                }
                reuse = status == 206 && c.getContentLengthLong() == end - begin + 1; // the whole answer was read
            }
        } catch (StoreException e) {
            throw new IOException(e.getMessage());
        } finally {
            if (!reuse) {
                c.disconnect();
            }
        }
    }

    private HttpURLConnection open(URI url, String range) {
        try {
            HttpURLConnection c = (HttpURLConnection) url.toURL().openConnection();
            c.setInstanceFollowRedirects(false);
            c.setConnectTimeout(millis(policy.connectTimeout()));
            c.setReadTimeout(millis(policy.readTimeout()));
            c.setUseCaches(false);
            if (range != null) {
                c.setRequestProperty("Range", range);
            }
            return c;
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException("dataset source " + url + " is not an http(s) URL");
        }
    }

    private static int millis(Duration d) {
        return (int) Math.min(Integer.MAX_VALUE, d.toMillis());
    }

    private int status(HttpURLConnection c, URI url) {
        int status;
        try {
            status = c.getResponseCode();
        } catch (SocketTimeoutException e) {
            throw timeout(url);
        } catch (IOException e) {
            throw upstream(url, e.getClass().getSimpleName());
        }
        if (status >= 300 && status < 400) {
            throw upstream(url, "status " + status + " (redirects are not followed)");
        }
        return status;
    }

    private byte[] read(HttpURLConnection c, URI url, int max, java.util.function.LongConsumer held) {
        long deadline = deadline();
        try (InputStream in = c.getInputStream()) {
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            byte[] buf = new byte[1 << 16];
            long told = 0;
            for (int n; out.size() < max && (n = in.read(buf, 0, Math.min(buf.length, max - out.size()))) >= 0; ) {
                if (out.size() + n > told) { // in steps of 1 MiB, ahead of the buffer
                    told = out.size() + n + (1L << 20);
                    held.accept(3 * told);
                }
                out.write(buf, 0, n);
                checkDeadline(url, deadline);
            }
            return out.toByteArray();
        } catch (SocketTimeoutException e) {
            throw timeout(url);
        } catch (IOException e) {
            throw upstream(url, e.getClass().getSimpleName());
        }
    }

    private long deadline() {
        return System.nanoTime() + policy.readTimeout().toNanos() * DEADLINE_READS;
    }

    private void checkDeadline(URI url, long deadline) {
        if (System.nanoTime() - deadline > 0) {
            throw timeout(url);
        }
    }

    private StoreException timeout(URI url) {
        return new StoreException(StoreException.Kind.GATEWAY_TIMEOUT, "GET " + url + ": no complete answer in time "
                + "(source connect timeout " + policy.connectTimeout().toMillis() + " ms, read timeout "
                + policy.readTimeout().toMillis() + " ms)");
    }

    private static StoreException upstream(URI url, String what) {
        return new StoreException(StoreException.Kind.BAD_GATEWAY, "GET " + url + ": " + what);
    }

    private static StoreException tooLarge(URI url, long size, int max) {
        return new StoreException(StoreException.Kind.TOO_LARGE, "GET " + url + ": the index has " + size
                + " bytes or more (limit " + max + ")");
    }
}
