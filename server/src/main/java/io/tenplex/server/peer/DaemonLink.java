package io.tenplex.server.peer;

import io.netty.handler.ssl.SslContext;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * How this process talks to daemons: the scheme ({@code http}, or {@code https} when the cluster
 * runs TLS), the certificates it trusts, and the bearer token. Every HTTP call to a daemon takes its
 * URI, its {@link HttpClient} and its {@code Authorization} header from here, so none builds
 * {@code "http://" + host} itself. Immutable and thread-safe.
 */
public final class DaemonLink {
    private static final Duration CONNECT = Duration.ofSeconds(5);

    private final String scheme;
    private final String token;
    private final SslContext netty;
    private final HttpClient http;

    private DaemonLink(String scheme, String token, SSLContext jdk, SslContext netty) {
        this.scheme = scheme;
        this.token = token == null || token.isEmpty() ? null : token;
        this.netty = netty;
        HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(CONNECT);
        this.http = (jdk == null ? b : b.sslContext(jdk)).build();
    }

    /** Plain HTTP (https addresses given in full still use the JDK's trusted CAs). */
    public static DaemonLink plain(String token) {
        return new DaemonLink("http", token, null, null);
    }

    /**
     * HTTPS to every daemon, trusting the PEM certificates in {@code caFile} (null: the JDK's trusted
     * CAs); host names are verified against the certificates.
     *
     * @throws IllegalArgumentException if the CA file cannot be read or holds no certificate
     */
    public static DaemonLink tls(Path caFile, String token) {
        TrustManagerFactory trust = TlsFiles.trust(caFile);
        return new DaemonLink("https", token, TlsFiles.jdkClient(trust), TlsFiles.nettyClient(trust));
    }

    /** True when daemons are reached over https. */
    public boolean tls() {
        return scheme.equals("https");
    }

    /** The bearer token of the daemons, or null. */
    public String token() {
        return token;
    }

    /** One shared client (keep-alive pool, 5 s connect timeout) trusting what this link trusts. */
    public HttpClient http() {
        return http;
    }

    /** {@code scheme://host:port} + {@code pathAndQuery}. */
    public URI uri(InetSocketAddress daemon, String pathAndQuery) {
        return URI.create(scheme + "://" + hostPort(daemon.getHostString(), daemon.getPort()) + pathAndQuery);
    }

    /** As {@link #uri(InetSocketAddress, String)} for {@code host:port}; an address with a scheme keeps it. */
    public URI uri(String address, String pathAndQuery) {
        String a = address.replaceAll("/+$", "");
        return URI.create((a.contains("://") ? a : scheme + "://" + a) + pathAndQuery);
    }

    /** A request to {@code daemon} with the {@code Authorization} header (when there is a token). */
    public HttpRequest.Builder request(InetSocketAddress daemon, String pathAndQuery) {
        return authorize(HttpRequest.newBuilder(uri(daemon, pathAndQuery)));
    }

    /** Adds the {@code Authorization} header when there is a token. */
    public HttpRequest.Builder authorize(HttpRequest.Builder b) {
        return token == null ? b : b.header("Authorization", "Bearer " + token);
    }

    /** The Netty client context of {@link PeerClient}, or null for plain HTTP. */
    SslContext nettyClient() {
        return netty;
    }

    private static String hostPort(String host, int port) {
        return (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
    }
}
