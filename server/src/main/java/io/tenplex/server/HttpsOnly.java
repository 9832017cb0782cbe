package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The first handler of a TLS port: when a connection's first bytes are a TLS record it puts Netty's
 * {@link SslHandler} in its place; plain HTTP gets a 400 that says to use https, and the connection
 * is closed (no request is read, so no token sent in clear is ever looked at).
 */
final class HttpsOnly extends ByteToMessageDecoder {
    /** A TLS record header is 5 bytes. */
    private static final int PEEK = 5;
    private static final String REASON = "this port serves HTTPS only: use https\n";
    private static final byte[] REFUSAL = ("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + Errors.CODE_HEADER + ": bad_request\r\n"
            + "Connection: close\r\nContent-Length: " + REASON.length() + "\r\n\r\n" + REASON)
            .getBytes(StandardCharsets.US_ASCII);

    private final SslContext ssl;

    HttpsOnly(SslContext ssl) {
        this.ssl = ssl;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (in.readableBytes() < PEEK) {
            return;
        }
        if (SslHandler.isEncrypted(in, false)) {
            ctx.pipeline().replace(this, "tls", ssl.newHandler(ctx.alloc()));
            return; // the cumulated bytes go on to the SslHandler
        }
        in.skipBytes(in.readableBytes());
        ctx.writeAndFlush(Unpooled.wrappedBuffer(REFUSAL)).addListener(ChannelFutureListener.CLOSE);
    }
}
