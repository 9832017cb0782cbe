package io.tenplex.daemon;


import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a bearer token comes from: a value, a file ({@code --token-file}, {@code TENPLEX_TOKEN_FILE};
 * not in the process list) or the environment ({@code TENPLEX_TOKEN}). Errors and warnings name the
 * file, never its contents.
 */
public final class Tokens {
    static final String ENV = "TENPLEX_TOKEN";
    static final String ENV_FILE = "TENPLEX_TOKEN_FILE";
    /** Longer files are not tokens (and are not read whole). */
    static final int MAX_BYTES = 4096;
    private static final Logger LOG = LoggerFactory.getLogger(Tokens.class);

    private Tokens() {
    }

    /**
     * The token of one source that may give it as a value or as a file, or null when it gives neither.
     *
     * @throws IllegalArgumentException when it gives both, or the file is not a usable token
     */
    static String pick(String valueName, String value, String fileName, Path file) {
        if (value != null && value.isBlank()) {
            // an empty secret must not turn authentication off without a word
            throw new IllegalArgumentException(valueName + " is empty: give a token, or leave " + valueName + " out to "
                    + "run without one");
        }
        if (value != null && file != null) {
            throw new IllegalArgumentException("give the token once: " + valueName + " or " + fileName + ", not both");
        }
        return file != null ? read(file) : value;
    }

    /** The client side: {@code --token}/{@code --token-file}, else {@code TENPLEX_TOKEN_FILE}/{@code TENPLEX_TOKEN}. */
    public static String forClient(String value, Path file, Map<String, String> env) {
        String t = pick("--token", value, "--token-file", file);
        if (t != null) {
            return t;
        }
        String envFile = env.get(ENV_FILE);
        return pick(ENV, env.get(ENV), ENV_FILE, envFile == null || envFile.isEmpty() ? null : Path.of(envFile));
    }

    /**
     * Reads a token file: its content less surrounding white space (a trailing newline is fine).
     * Warns when other users may read it.
     *
     * @throws IllegalArgumentException when it is missing, unreadable, empty, too long or holds control characters
     */
    static String read(Path file) {
        byte[] bytes;
        try {
            if (Files.exists(file) && !Files.isRegularFile(file)) { // /dev/zero, a FIFO: never read them
                throw new IllegalArgumentException("token file " + file + " is not a regular file");
            }
            try (java.io.InputStream in = Files.newInputStream(file)) {
                bytes = in.readNBytes(MAX_BYTES + 1); // never more, whatever the size says
            }
            if (bytes.length > MAX_BYTES) {
                throw new IllegalArgumentException("token file " + file + " is larger than " + MAX_BYTES
                        + " bytes: not a token");
            }
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("token file " + file + " does not exist");
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read token file " + file + " (" + e.getClass().getSimpleName() + ")");
        }
        String token = new String(bytes, StandardCharsets.UTF_8).strip();
        if (token.isEmpty()) {
            throw new IllegalArgumentException("token file " + file + " is empty");
        }
        if (token.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            throw new IllegalArgumentException("token file " + file + " holds control characters or line breaks "
                    + "inside the token");
        }
        warnIfOthersRead(file);
        return token;
    }

    private static void warnIfOthersRead(Path file) {
        try {
            Set<PosixFilePermission> p = Files.getPosixFilePermissions(file);
            if (p.contains(PosixFilePermission.OTHERS_READ)) {
                LOG.warn("token file {} is readable by every user ({}); restrict it: chmod 600 {}", file,
                        java.nio.file.attribute.PosixFilePermissions.toString(p), file);
            }
        } catch (IOException | UnsupportedOperationException e) {
            // not a POSIX file system: nothing to say
        }
    }

    /** Warns that a token given on the command line is visible in the process list. */
    public static void warnCommandLine(String option) {
        LOG.warn("{} is visible to every local user in the process list (/proc/PID/cmdline); prefer --token-file or "
                + "the environment ({} / {})", option, ENV_FILE, ENV);
    }
}
