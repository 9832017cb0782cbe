package io.tenplex.server.datasets;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A response body collected in the heap up to a limit: a body that announces more (Content-Length) or
 * sends more fails with an {@link IllegalStateException} and is not read further, so a peer cannot
 * make this daemon allocate what it likes.
 */
final class LimitedBody implements HttpResponse.BodySubscriber<byte[]> {
    private final long limit;
    private final long announced;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final CompletableFuture<byte[]> done = new CompletableFuture<>();
    private Flow.Subscription subscription;

    private LimitedBody(long limit, long announced) {
        this.limit = limit;
        this.announced = announced;
    }

    static HttpResponse.BodyHandler<byte[]> handler(long limit) {
        return info -> new LimitedBody(limit, info.headers().firstValueAsLong("Content-Length").orElse(-1));
    }

    @Override
    public CompletionStage<byte[]> getBody() {
        return done;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        if (announced > limit) { // refused before a byte of the body is read
            s.cancel();
            done.completeExceptionally(new IllegalStateException("answer of " + announced + " bytes over the limit of "
                    + limit + " bytes"));
            return;
        }
        s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
        if (done.isDone()) {
            return;
        }
        for (ByteBuffer b : items) {
            if (out.size() + (long) b.remaining() > limit) {
                subscription.cancel();
                done.completeExceptionally(new IllegalStateException("answer over the limit of " + limit + " bytes"));
                return;
            }
            byte[] a = new byte[b.remaining()];
            b.get(a);
            out.write(a, 0, a.length);
        }
    }

    @Override
    public void onError(Throwable t) {
        done.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
        done.complete(out.toByteArray());
    }
}
