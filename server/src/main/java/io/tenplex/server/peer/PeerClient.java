package io.tenplex.server.peer;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.pool.AbstractChannelPoolHandler;
import io.netty.channel.pool.FixedChannelPool;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringEncoder;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reads sub-tensors from other daemons: {@code GET /api/v1/tensors/<path>?range=...} with
 * {@code x-want-crc32c}, the body streamed into the caller's buffer as it arrives (no aggregation),
 * over a bounded pool of keep-alive connections per peer. Thread-safe; close it to release its
 * threads and connections.
 */
public final class PeerClient implements AutoCloseable {
    private final EventLoopGroup group;
    private final Bootstrap bootstrap;
    private final int maxConnections;
    private final String token;
    private final DaemonLink link;
    private final Map<InetSocketAddress, FixedChannelPool> pools = new ConcurrentHashMap<>();
    /** Whether {@link #close} shuts the event loops down (they were made here, not handed in). */
    private final boolean ownsGroup;

    /** @param token bearer token of the peers, or null */
    public PeerClient(int maxConnectionsPerPeer, String token) {
        this(DaemonLink.plain(token), maxConnectionsPerPeer);
    }

    /** @param link how peers are reached (TLS or not) and their bearer token */
    public PeerClient(DaemonLink link, int maxConnectionsPerPeer) {
        this(link, maxConnectionsPerPeer, new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory("tenplex-peer", true),
                NioIoHandler.newFactory()), true);
    }

    /**
     * @param group the event loops (NIO) the connections run on; the caller shuts them down after
     *     closing this client
     */
    public PeerClient(DaemonLink link, int maxConnectionsPerPeer, EventLoopGroup group) {
        this(link, maxConnectionsPerPeer, group, false);
    }

    private PeerClient(DaemonLink link, int maxConnectionsPerPeer, EventLoopGroup group, boolean ownsGroup) {
        this.maxConnections = maxConnectionsPerPeer;
        this.link = link;
        this.token = link.token();
        this.group = group;
        this.ownsGroup = ownsGroup;
        this.bootstrap = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true).option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5000);
    }

    private FixedChannelPool pool(InetSocketAddress peer) {
        return pools.computeIfAbsent(peer, p -> new FixedChannelPool(bootstrap.clone().remoteAddress(p),
                new AbstractChannelPoolHandler() {
                    @Override
                    public void channelCreated(Channel ch) {
                        if (link.nettyClient() != null) {
                            ch.pipeline().addLast("tls", link.nettyClient().newHandler(ch.alloc(), p.getHostString(),
                                    p.getPort()));
                        }
                        ch.pipeline().addLast("http", new HttpClientCodec());
                    }
                }, maxConnections));
    }

    /** How this client reaches daemons; the other daemon-to-daemon calls use the same. */
    public DaemonLink link() {
        return link;
    }

    /**
     * Reads {@code range} of the tensor at {@code path} on {@code peer} into {@code dst} (from its
     * position; the answer must be exactly {@code dst.remaining()} bytes).
     *
     * @return completes with the CRC32C the peer vouched for (always present: it is asked for), or
     *     fails with an {@link IOException} naming the peer and the reason; a {@link
     *     ChecksumMissingException} when the answer came without a valid checksum
     */
    public CompletableFuture<OptionalInt> readRegion(InetSocketAddress peer, String path, String range, ByteBuffer dst) {
        return readRegion(peer, path, range, dst, 0);
    }

    /**
     * As {@link #readRegion(InetSocketAddress, String, String, ByteBuffer)}, asking the peer to send
     * no faster than {@code pace} bytes/s ({@code x-tenplex-pace}; 0: as fast as it can).
     */
    public CompletableFuture<OptionalInt> readRegion(InetSocketAddress peer, String path, String range, ByteBuffer dst,
            long pace) {
        CompletableFuture<OptionalInt> result = new CompletableFuture<>();
        FixedChannelPool pool = pool(peer);
        pool.acquire().addListener(f -> {
            if (!f.isSuccess()) {
                result.completeExceptionally(new IOException("cannot reach peer " + peer + ": " + f.cause().getMessage(),
                        f.cause()));
                return;
            }
            Channel ch = (Channel) f.getNow();
            Reader reader = new Reader(peer, dst, result, pool, ch);
            if (ch.pipeline().get("reader") != null) {
                ch.pipeline().remove("reader");
            }
            ch.pipeline().addLast("reader", reader);
            QueryStringEncoder uri = new QueryStringEncoder("/api/v1/tensors" + (path.startsWith("/") ? "" : "/") + path);
            if (range != null) {
                uri.addParam("range", range);
            }
            DefaultFullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, uri.toString());
            req.headers().set(HttpHeaderNames.HOST, peer.getHostString() + ":" + peer.getPort());
            req.headers().set("x-want-crc32c", "1");
            if (pace > 0) {
                req.headers().set("x-tenplex-pace", Long.toString(pace));
            }
            if (token != null) {
                req.headers().set(HttpHeaderNames.AUTHORIZATION, "Bearer " + token);
            }
            ch.writeAndFlush(req).addListener(w -> {
                if (!w.isSuccess()) {
                    reader.fail(new IOException("request to " + peer + " failed: " + w.cause().getMessage(), w.cause()));
                }
            });
        });
        return result;
    }

    /** Streams one response into the destination buffer. */
    private static final class Reader extends SimpleChannelInboundHandler<HttpObject> {
        private final InetSocketAddress peer;
        private final ByteBuffer dst;
        private final CompletableFuture<OptionalInt> result;
        private final FixedChannelPool pool;
        private final Channel channel;
        private int status;
        private OptionalInt crc = OptionalInt.empty();
        private final StringBuilder error = new StringBuilder();
        private boolean keepAlive;
        private boolean finished;

        Reader(InetSocketAddress peer, ByteBuffer dst, CompletableFuture<OptionalInt> result, FixedChannelPool pool,
                Channel channel) {
            this.peer = peer;
            this.dst = dst;
            this.result = result;
            this.pool = pool;
            this.channel = channel;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
            if (finished) {
                return;
            }
            if (msg instanceof HttpResponse r) {
                status = r.status().code();
                keepAlive = HttpUtil.isKeepAlive(r);
                long len = HttpUtil.getContentLength(r, -1L);
                if (status == 200) {
                    crc = checksum(r.headers().get("x-tensor-crc32c"));
                    if (crc.isEmpty()) {
                        fail(new ChecksumMissingException(peer + " answered without a valid x-tensor-crc32c although "
                                + "one was asked for (x-want-crc32c): the bytes cannot be verified"));
                        return;
                    }
                }
                if (status == 200 && len != dst.remaining()) {
                    fail(new IOException(peer + " answered " + len + " bytes, expected " + dst.remaining()));
                    return;
                }
            }
            if (msg instanceof HttpContent c) {
                ByteBuf b = c.content();
                if (status == 200) {
                    if (b.readableBytes() > dst.remaining()) {
                        fail(new IOException(peer + " sent more bytes than announced"));
                        return;
                    }
                    int n = b.readableBytes();
                    b.getBytes(b.readerIndex(), dst.duplicate().limit(dst.position() + n));
                    dst.position(dst.position() + n);
                } else if (error.length() < 500) {
                    error.append(b.toString(StandardCharsets.UTF_8));
                }
                if (msg instanceof LastHttpContent) {
                    if (status != 200) {
                        fail(new IOException(peer + " answered " + status + ": " + error.toString().strip()));
                    } else if (dst.hasRemaining()) {
                        fail(new IOException(peer + " ended the body " + dst.remaining() + " bytes early"));
                    } else {
                        finished = true;
                        release(!keepAlive);
                        result.complete(crc);
                    }
                }
            }
        }

        /** The checksum of an {@code x-tensor-crc32c} value: exactly 8 hex digits, else empty. */
        private static OptionalInt checksum(String hex) {
            if (hex == null || hex.length() != 8) {
                return OptionalInt.empty();
            }
            try {
                return OptionalInt.of(Integer.parseUnsignedInt(hex, 16));
            } catch (NumberFormatException e) {
                return OptionalInt.empty();
            }
        }

        void fail(IOException e) {
            if (!finished) {
                finished = true;
                release(true);
                result.completeExceptionally(e);
            }
        }

        private void release(boolean close) {
            if (close) {
                channel.close();
            }
            pool.release(channel);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            fail(new IOException("connection to " + peer + " closed before the answer was complete"));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            fail(new IOException("connection to " + peer + " failed: " + cause.getMessage(), cause));
        }
    }

    @Override
    public void close() {
        pools.values().forEach(FixedChannelPool::close);
        if (ownsGroup) {
            group.shutdownGracefully(0, 2, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
