package io.tenplex.server;

import io.netty.buffer.ByteBuf;

/**
 * One request's handling, driven by {@link HttpHandler}: {@link #head} when the request line and
 * headers arrive (validate and refuse early here), {@link #content} for each piece of the body, and
 * {@link #end} once the body is complete, which must respond through the exchange (now or later).
 * {@link #abort} frees what the call holds when it fails or the connection closes; it may run after
 * a failure in any step and must be idempotent.
 */
abstract class Call {

    void head(Exchange ex) throws Exception {
    }

    /** A piece of the body; the buffer is borrowed for the duration of the call. */
    void content(ByteBuf data) throws Exception {
        // bodies of routes that take none are ignored
    }

    abstract void end(Exchange ex) throws Exception;

    /**
     * A buffer for the next socket read, where the body's next bytes belong (an upload's blob), or
     * null for the connection's usual receive buffer (the default). The handler asks only while a
     * body of known length is streaming; {@code onWire} is how many of its bytes are still to come.
     */
    ByteBuf landing(long onWire) {
        return null;
    }

    void abort() {
    }

    /** A call that answers from the head alone. */
    static Call of(ThrowingConsumer<Exchange> answer) {
        return new Call() {
            @Override
            void end(Exchange ex) throws Exception {
                answer.accept(ex);
            }
        };
    }

    /**
     * A call whose answer may block (large directory walks, recursive deletes, checksum lists): the
     * work runs on the server's work executor, and the reply it returns is sent on the event loop.
     */
    static Call onWork(Work work) {
        return new Call() {
            @Override
            void end(Exchange ex) {
                ex.rc.work().execute(() -> {
                    Reply reply;
                    try {
                        reply = work.run(ex);
                    } catch (Throwable t) {
                        ex.ctx.executor().execute(() -> ex.respondError(t));
                        return;
                    }
                    ex.ctx.executor().execute(() -> send(ex, reply));
                });
            }
        };
    }

    private static void send(Exchange ex, Reply reply) {
        try {
            reply.send(ex);
        } catch (Throwable t) {
            if (!ex.responded()) {
                ex.respondError(t);
            }
        }
    }

    /** A JSON reply, written to bytes now (on the work executor when called there). */
    static Reply json(Exchange ex, io.netty.handler.codec.http.HttpResponseStatus status, Object value)
            throws Exception {
        byte[] body = ex.rc.json().writeValueAsBytes(value);
        return e -> e.respond(status, "application/json", body, null);
    }

    /** Work that may block; returns the reply to send. */
    @FunctionalInterface
    interface Work {
        Reply run(Exchange ex) throws Exception;
    }

    /** Sends an answer; runs on the event loop. */
    @FunctionalInterface
    interface Reply {
        void send(Exchange ex) throws Exception;
    }

    @FunctionalInterface
    interface ThrowingConsumer<T> {
        void accept(T t) throws Exception;
    }
}
