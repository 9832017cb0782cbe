package io.tenplex.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Signs the roles {@code tenplex run --live} sets in its rendezvous store, which anyone who reaches the
 * store's port can also set: the value at {@code tenplex/live/<n>} is {@code {"change", "role", "mac"}},
 * the HMAC-SHA256 (hex) over {@code tenplex-live-role}, the job, {@code n}, the daemon's change id and the
 * role's JSON text, joined by NUL bytes, keyed with the run's secret. The ranks get the secret in their
 * environment ({@code TENPLEX_LIVE_SECRET}; never on a command line, never logged) and act only on a role
 * whose MAC verifies (clients/python/tenplex/live_auth.py, docs/LIVE.md).
 */
final class RoleSigner {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String job;
    private final String secret;

    RoleSigner(String job, String secret) {
        this.job = job;
        this.secret = secret;
    }

    /** A signer with a fresh random secret (256 bits) for one run of {@code job}. */
    static RoleSigner random(String job) {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return new RoleSigner(job, HexFormat.of().formatHex(b));
    }

    /** The secret, for the ranks' environment only. */
    String secret() {
        return secret;
    }

    /** The value to set at reconfiguration {@code n}'s key for {@code role} (JSON), handed out for {@code change} (or null). */
    String sign(int n, String change, String role) {
        String c = change == null ? "" : change;
        ObjectNode v = TenplexCli.JSON.createObjectNode();
        v.put("change", c);
        v.put("role", role);
        v.put("mac", mac("tenplex-live-role\0" + job + "\0" + n + "\0" + c + "\0" + role));
        return v.toString();
    }

    private String mac(String message) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return HexFormat.of().formatHex(m.doFinal(message.getBytes(StandardCharsets.UTF_8)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available", e);
        }
    }

    @Override
    public String toString() {
        return "RoleSigner[job=" + job + "]"; // never the secret
    }
}
