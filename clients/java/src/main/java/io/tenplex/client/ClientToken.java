package io.tenplex.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** The JVM client's bearer token from the environment; errors name files, never their contents. */
final class ClientToken {
    private ClientToken() {
    }

    /** {@code TENPLEX_TOKEN_FILE} (its content, stripped) if set, else {@code TENPLEX_TOKEN}, else null. */
    static String fromEnv(Map<String, String> env) {
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
