package io.tenplex.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.handler.timeout.WriteTimeoutHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.tenplex.store.TensorStore;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon's HTTP server (Netty; epoll when available). Start it, read {@link #port()}, close it.
 * Close is idempotent and waits for the event loops to finish.
 */
public final class RestServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RestServer.class);

    private final RestContext rc;
    private final Router router = new Router();
    private final SslContext ssl;
    private final boolean ownsWork;
    private EventLoopGroup boss;
    private EventLoopGroup workers;
    private Channel channel;
    private boolean closed;

    /** @param token bearer token required on every request except health, or null for none */
    public RestServer(TensorStore store, String token) {
        this(store, token, ServerLimits.DEFAULTS, null);
    }

    /** With the given timeouts and limits. */
    public RestServer(TensorStore store, String token, ServerLimits limits) {
        this(store, token, limits, null);
    }

    /** @param ssl TLS on the port (see {@code TlsFiles.server}), or null for plain HTTP */
    public RestServer(TensorStore store, String token, SslContext ssl) {
        this(store, token, ServerLimits.DEFAULTS, ssl);
    }

    /**
     * With a work executor of its own (two threads), shut down at {@link #close()}.
     *
     * @param limits timeouts and limits
     * @param ssl TLS on the port (see {@code TlsFiles.server}), or null for plain HTTP
     */
    public RestServer(TensorStore store, String token, ServerLimits limits, SslContext ssl) {
        this(store, token, limits, ssl, Executors.newFixedThreadPool(2, new DefaultThreadFactory("tenplex-work", true)),
                true);
    }

    /**
     * @param work where routes run what can block the event loop (directory walks, recursive deletes,
     *     checksum lists, tar unpacking); the caller owns it and shuts it down after {@link #close()}
     */
    public RestServer(TensorStore store, String token, ServerLimits limits, SslContext ssl, ExecutorService work) {
        this(store, token, limits, ssl, work, false);
    }

    private RestServer(TensorStore store, String token, ServerLimits limits, SslContext ssl, ExecutorService work,
            boolean ownsWork) {
        this.ssl = ssl;
        this.ownsWork = ownsWork;
        this.rc = new RestContext(store, new ObjectMapper(), work, new RestMetrics(store),
                token == null || token.isEmpty() ? null : token.getBytes(StandardCharsets.UTF_8), limits,
                new AtomicLong());
    }

    /** Binds and starts serving; returns the bound address (port 0 picks a free one). */
    public synchronized InetSocketAddress start(String host, int port) throws InterruptedException {
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends ServerChannel> type = epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        boss = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("tenplex-accept"), io);
        workers = new MultiThreadIoEventLoopGroup(0, new DefaultThreadFactory("tenplex-io"), io);
        HttpDecoderConfig decoder = new HttpDecoderConfig().setMaxInitialLineLength(64 * 1024)
                .setMaxHeaderSize(64 * 1024).setMaxChunkSize(1 << 20);
        ServerBootstrap b = new ServerBootstrap().group(boss, workers).channel(type)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                // large reads for large uploads: fewer, bigger body pieces (grows from 2 KiB to 1 MiB)
                .childOption(ChannelOption.RCVBUF_ALLOCATOR, receiveBuffers())
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        Deadlines deadlines = new Deadlines(rc.limits());
                        HttpHandler handler = new HttpHandler(rc, router, deadlines);
                        ch.pipeline().addLast("write-timeout", new WriteTimeoutHandler(
                                        rc.limits().write().toMillis(), TimeUnit.MILLISECONDS))
                                .addLast("deadlines", deadlines)
                                .addLast("http", new HttpServerCodec(decoder))
                                .addLast("chunks", new ChunkedWriteHandler())
                                .addLast("tenplex", handler);
                        if (ssl != null) {
                            ch.pipeline().addFirst("tls", new HttpsOnly(ssl));
                        } else {
                            // upload bodies are read straight into their blobs (over TLS the socket holds ciphertext)
                            ch.config().setRecvByteBufAllocator(new LandingAllocator(receiveBuffers(), handler::landing));
                        }
                    }
                });
        channel = b.bind(host, port).sync().channel();
        InetSocketAddress addr = (InetSocketAddress) channel.localAddress();
        LOG.info("listening on {}://{}:{} (transport={})", ssl == null ? "http" : "https", addr.getHostString(),
                addr.getPort(), epoll ? "epoll" : "nio");
        return addr;
    }

    private static AdaptiveRecvByteBufAllocator receiveBuffers() {
        return new AdaptiveRecvByteBufAllocator(2048, 64 * 1024, 1 << 20);
    }

    /** Adds a route for every path starting with {@code prefix} (before the built-in {@code /api/v1} routes). */
    public void addControl(String prefix, ControlHandler handler) {
        addControl(prefix, Router.labelOf(prefix), handler);
    }

    /** As {@link #addControl(String, ControlHandler)}, with the route's label in logs and metrics. */
    public void addControl(String prefix, String label, ControlHandler handler) {
        router.addControl(prefix, label, handler);
    }

    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    public RestMetrics metrics() {
        return rc.metrics();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (channel != null) {
            channel.close().syncUninterruptibly();
        }
        if (boss != null) {
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
            workers.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
        }
        if (!ownsWork) {
            return;
        }
        rc.work().shutdown();
        try {
            rc.work().awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
