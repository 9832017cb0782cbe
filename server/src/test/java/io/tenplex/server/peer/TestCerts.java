package io.tenplex.server.peer;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Key;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A self-signed certificate for 127.0.0.1 and localhost made at test time with the JDK's own
 * {@code keytool} (no openssl, no BouncyCastle), written as PEM: {@link #cert} (also the CA to
 * trust) and {@link #key} (unencrypted PKCS#8).
 */
public final class TestCerts {
    public final Path cert;
    public final Path key;

    private TestCerts(Path cert, Path key) {
        this.cert = cert;
        this.key = key;
    }

    /** The CA a client trusts: the self-signed certificate itself. */
    public Path ca() {
        return cert;
    }

    /** Makes {@code <name>.crt} and {@code <name>.key} in {@code dir}. */
    public static TestCerts create(Path dir, String name) throws IOException, InterruptedException {
        Path store = dir.resolve(name + ".p12");
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        Process p = new ProcessBuilder(keytool, "-genkeypair", "-alias", "tenplex", "-keyalg", "EC", "-groupname",
                "secp256r1", "-validity", "2", "-dname", "CN=tenplex-test", "-ext", "san=ip:127.0.0.1,dns:localhost",
                "-keystore", store.toString(), "-storetype", "PKCS12", "-storepass", "changeit", "-keypass", "changeit")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("keytool failed: " + out);
        }
        try (InputStream in = Files.newInputStream(store)) {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(in, "changeit".toCharArray());
            Key k = ks.getKey("tenplex", "changeit".toCharArray());
            Certificate c = ks.getCertificate("tenplex");
            Path cert = dir.resolve(name + ".crt");
            Path key = dir.resolve(name + ".key");
            Files.writeString(cert, pem("CERTIFICATE", c.getEncoded()));
            Files.writeString(key, pem("PRIVATE KEY", k.getEncoded())); // PKCS#8
            return new TestCerts(cert, key);
        } catch (java.security.GeneralSecurityException e) {
            throw new IOException(e);
        }
    }

    private static String pem(String type, byte[] der) {
        String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
        return String.join("\n", List.of("-----BEGIN " + type + "-----", body, "-----END " + type + "-----", ""));
    }
}
