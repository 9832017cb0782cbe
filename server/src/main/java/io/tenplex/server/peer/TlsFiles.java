package io.tenplex.server.peer;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS material from PEM files: the server's certificate chain and PKCS#8 key, the CA certificates a
 * client trusts. Failures are {@link IllegalArgumentException}s that name the file and never echo
 * its contents.
 */
public final class TlsFiles {
    private TlsFiles() {
    }

    /**
     * The server context of the REST port.
     *
     * @param cert PEM certificate chain (the server's certificate first)
     * @param key its unencrypted PKCS#8 PEM private key ({@code BEGIN PRIVATE KEY})
     */
    public static SslContext server(Path cert, Path key) {
        readable(cert, "certificate (--tls-cert)");
        readable(key, "key (--tls-key)");
        try {
            return SslContextBuilder.forServer(cert.toFile(), key.toFile()).build();
        } catch (SSLException | IllegalArgumentException e) {
            throw new IllegalArgumentException("TLS certificate " + cert + " and key " + key + " cannot be used (expected "
                    + "a PEM certificate chain and the matching unencrypted PKCS#8 PEM key, 'BEGIN PRIVATE KEY'): "
                    + e.getClass().getSimpleName());
        }
    }

    /** Trust in the PEM certificates of {@code caFile}, or in the JDK's trusted CAs when it is null. */
    static TrustManagerFactory trust(Path caFile) {
        try {
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(caFile == null ? null : caStore(caFile));
            return tmf;
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot trust the TLS CA file " + caFile + ": " + e.getClass().getSimpleName());
        }
    }

    private static KeyStore caStore(Path caFile) throws GeneralSecurityException {
        readable(caFile, "CA file (--tls-ca)");
        Collection<? extends Certificate> certs;
        try (InputStream in = Files.newInputStream(caFile)) {
            certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
        } catch (IOException | java.security.cert.CertificateException e) {
            certs = java.util.List.of();
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

    static SSLContext jdkClient(TrustManagerFactory trust) {
        try {
            SSLContext c = SSLContext.getInstance("TLS");
            c.init(null, trust.getTrustManagers(), null);
            return c;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK offers no TLS context", e);
        }
    }

    static SslContext nettyClient(TrustManagerFactory trust) {
        try {
            return SslContextBuilder.forClient().trustManager(trust).endpointIdentificationAlgorithm("HTTPS").build();
        } catch (SSLException e) {
            throw new IllegalStateException("cannot build the peer client's TLS context", e);
        }
    }

    private static void readable(Path file, String what) {
        if (file == null || !Files.isRegularFile(file) || !Files.isReadable(file)) {
            throw new IllegalArgumentException("TLS " + what + " " + file + " does not exist or is not a readable file");
        }
    }
}
