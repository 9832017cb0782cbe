package io.tenplex.client;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/** The client's TLS trust (PEM CA files) and token sources; errors name files, never their contents. */
final class ClientTls {
    private ClientTls() {
    }

    /** An SSL context trusting exactly the PEM certificates of {@code caFile} (host names are still verified). */
    static SSLContext trusting(Path caFile) {
        try (InputStream in = Files.newInputStream(caFile)) {
            Collection<? extends Certificate> certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
            if (certs.isEmpty()) {
                throw new IllegalArgumentException("TLS CA file " + caFile + " holds no PEM certificate");
            }
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            int i = 0;
            for (Certificate c : certs) {
                ks.setCertificateEntry("ca-" + i++, c);
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot use TLS CA file " + caFile + " (" + e.getClass().getSimpleName()
                    + ")");
        }
    }

    /** {@code TENPLEX_TOKEN_FILE} (its content, stripped) if set, else {@code TENPLEX_TOKEN}, else null. */
    static String token(Map<String, String> env) {
        String file = env.get("TENPLEX_TOKEN_FILE");
        if (file == null || file.isEmpty()) {
            return env.get("TENPLEX_TOKEN");
        }
        String t;
        try {
            t = Files.readString(Path.of(file), StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read token file " + file + " (" + e.getClass().getSimpleName() + ")");
        }
        if (t.isEmpty()) {
            throw new IllegalArgumentException("token file " + file + " is empty");
        }
        return t;
    }
}
