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

    @FunctionalInterface
    interface ThrowingConsumer<T> {
        void accept(T t) throws Exception;
    }
}
