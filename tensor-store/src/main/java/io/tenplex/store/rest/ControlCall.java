package io.tenplex.store.rest;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.ByteArrayOutputStream;
import java.util.concurrent.CompletionException;

/** Collects a control request's body, runs its handler, and answers on the event loop. */
final class ControlCall extends Call {
    private final ControlHandler handler;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();

    ControlCall(ControlHandler handler) {
        this.handler = handler;
    }

    @Override
    void head(Exchange ex) {
        if (Uploads.contentLength(ex) > ControlHandler.MAX_BODY) {
            throw new HttpError(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "control message over "
                    + ControlHandler.MAX_BODY + " bytes");
        }
    }

    @Override
    void content(ByteBuf data) {
        if (body.size() + data.readableBytes() > ControlHandler.MAX_BODY) {
            throw new HttpError(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "control message over "
                    + ControlHandler.MAX_BODY + " bytes");
        }
        byte[] b = new byte[data.readableBytes()];
        data.getBytes(data.readerIndex(), b);
        body.writeBytes(b);
    }

    @Override
    void end(Exchange ex) {
        ControlHandler.Request req = new ControlHandler.Request(ex.method().name(), ex.query.path(),
                ex.query.parameters(), ex.header(HttpHeaderNames.CONTENT_TYPE), body.toByteArray());
        handler.handle(req).whenComplete((r, t) -> ex.ctx.executor().execute(() -> {
            if (t != null) {
                ex.respondError(t instanceof CompletionException && t.getCause() != null ? t.getCause() : t);
            } else {
                ex.respond(HttpResponseStatus.valueOf(r.status()), r.contentType(), r.body(), null);
            }
        }));
    }
}
