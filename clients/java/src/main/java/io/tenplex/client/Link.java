package io.tenplex.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * How the client reaches a daemon: the scheme for addresses given as {@code host:port}, the bearer
 * token, and one JDK {@link HttpClient} trusting what the client trusts. Plain JDK: no Netty, no
 * tenplex modules. Immutable and thread-safe.
 */
final class Link {
    private static final Duration CONNECT = Duration.ofSeconds(5);

    private final String scheme;
    private final String token;
    private final HttpClient http;

    Link(String scheme, String token, HttpClient http) {
        this.scheme = scheme;
        this.token = token == null || token.isEmpty() ? null : token;
        this.http = http;
    }

    /** Plain HTTP ({@code https://} addresses given in full use the JDK's trusted CAs). */
    static Link plain(String token) {
        return new Link("http", token, HttpClient.newBuilder().connectTimeout(CONNECT).build());
    }

    /**
     * HTTPS trusting the PEM certificates of {@code caFile} (null: the JDK's trusted CAs).
     *
     * @throws IllegalArgumentException naming the file (never its contents) when it holds no certificate
     */
    static Link tls(Path caFile, String token) {
        try {
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(caFile == null ? null : caStore(caFile));
            SSLContext ssl = SSLContext.getInstance("TLS");
            ssl.init(null, tmf.getTrustManagers(), null);
            return new Link("https", token, HttpClient.newBuilder().connectTimeout(CONNECT).sslContext(ssl).build());
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot trust the TLS CA file " + caFile + ": " + e.getClass().getSimpleName());
        }
    }

    private static KeyStore caStore(Path caFile) throws GeneralSecurityException {
        if (!Files.isRegularFile(caFile) || !Files.isReadable(caFile)) {
            throw new IllegalArgumentException("TLS CA file " + caFile + " does not exist or is not a readable file");
        }
        Collection<? extends Certificate> certs;
        try (InputStream in = Files.newInputStream(caFile)) {
            certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
        } catch (IOException | CertificateException e) {
            certs = List.of();
        }
        if (certs.isEmpty()) {
            throw new IllegalArgumentException("TLS CA file " + caFile + " holds no PEM certificate");
        }
        KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
        try {
            ks.load(null, null);
        } catch (IOException e) {
            throw new GeneralSecurityException(e);
        }
        int i = 0;
        for (Certificate c : certs) {
            ks.setCertificateEntry("ca-" + i++, c);
        }
        return ks;
    }

    HttpClient http() {
        return http;
    }

    /** {@code address} + {@code pathAndQuery}; an address without a scheme gets this link's. */
    URI uri(String address, String pathAndQuery) {
        String a = address.replaceAll("/+$", "");
        return URI.create((a.contains("://") ? a : scheme + "://" + a) + pathAndQuery);
    }

    /** Adds the {@code Authorization} header when there is a token. */
    HttpRequest.Builder authorize(HttpRequest.Builder b) {
        return token == null ? b : b.header("Authorization", "Bearer " + token);
    }
}
