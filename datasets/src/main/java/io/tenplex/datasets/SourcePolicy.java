package io.tenplex.datasets;

import io.tenplex.store.StoreException;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Where dataset sources (index files and sample files) may come from, as the operator configured it:
 * local files only below the data roots (none by default, so local sources are refused), URLs only on
 * the allowed hosts (none by default; loopback is not implicitly allowed), and the timeouts of every
 * fetch. Paths are canonicalised (symbolic links and {@code ..} resolved) before they are checked,
 * and a refusal reads the same whether the file is missing or outside the roots. Immutable.
 *
 * @param dataRoots absolute directories below which local sources may lie (a root that does not exist
 *     yet allows nothing until it does; roots are canonicalised when a source is checked)
 * @param allowedHosts {@code host} (any port) or {@code host:port} ({@code [v6]:port}), lower case
 * @param connectTimeout connect timeout of every HTTP fetch
 * @param readTimeout longest wait for the next bytes of an HTTP answer
 */
public record SourcePolicy(List<Path> dataRoots, List<String> allowedHosts, Duration connectTimeout,
        Duration readTimeout) {
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);
    public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);
    static final String HOW_ROOTS = "the operator allows local sources with tenplexd --data-root DIR "
            + "(or dataRoots in the config file)";
    static final String HOW_HOSTS = "the operator allows URL sources with tenplexd --allow-source-host HOST[:PORT] "
            + "(or allowSourceHosts in the config file)";

    public SourcePolicy {
        dataRoots = dataRoots.stream().map(SourcePolicy::canonicalRoot).toList();
        allowedHosts = allowedHosts.stream().map(SourcePolicy::hostEntry).toList();
        positive(connectTimeout, "source connect timeout");
        positive(readTimeout, "source read timeout");
    }

    /** No local sources, no URL sources, default timeouts. */
    public static SourcePolicy none() {
        return new SourcePolicy(List.of(), List.of(), DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT);
    }

    public SourcePolicy withDataRoots(List<Path> roots) {
        return new SourcePolicy(roots, allowedHosts, connectTimeout, readTimeout);
    }

    public SourcePolicy withAllowedHosts(List<String> hosts) {
        return new SourcePolicy(dataRoots, hosts, connectTimeout, readTimeout);
    }

    public SourcePolicy withTimeouts(Duration connect, Duration read) {
        return new SourcePolicy(dataRoots, allowedHosts, connect, read);
    }

    private static void positive(Duration d, String what) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(what + " " + d + " (expected: > 0)");
        }
    }

    private static Path canonicalRoot(Path root) {
        if (!root.isAbsolute()) {
            throw new IllegalArgumentException("data root " + root + " must be an absolute path");
        }
        return root.normalize();
    }

    /** Validates {@code host}, {@code host:port} or {@code [v6]:port}; returns it in lower case. */
    static String hostEntry(String entry) {
        String e = entry.trim().toLowerCase(Locale.ROOT);
        int colon = e.startsWith("[") ? e.indexOf("]:") + 1 : e.lastIndexOf(':');
        String host = colon > 0 ? e.substring(0, colon) : e;
        if (host.isEmpty() || host.chars().anyMatch(c -> c == '/' || c == '@' || Character.isWhitespace(c))
                || (e.startsWith("[") && !host.endsWith("]")) || (!e.startsWith("[") && host.indexOf(':') >= 0)) {
            throw new IllegalArgumentException("allowed source host '" + entry + "' is not HOST or HOST:PORT");
        }
        if (colon > 0) {
            port(e.substring(colon + 1), entry);
        }
        return e;
    }

    private static int port(String text, String entry) {
        try {
            int p = Integer.parseInt(text);
            if (p < 1 || p > 65535) {
                throw new NumberFormatException();
            }
            return p;
        } catch (NumberFormatException ex) {
            throw new IllegalArgumentException("port of '" + entry + "' is not 1..65535");
        }
    }

    /** True if {@code host} (as {@link URI#getHost} gives it) on {@code port} is an allowed source host. */
    public boolean allowsHost(String host, int port) {
        String h = host.toLowerCase(Locale.ROOT);
        return allowedHosts.contains(h) || allowedHosts.contains(h + ":" + port);
    }

    /** The URL of an {@code http(s)} source, if its host is allowed; else a 403 (400 if it is no URL). */
    URI httpSource(String url) {
        URI u;
        try {
            u = new URI(url);
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException("dataset source '" + url + "' is not a valid URL");
        }
        if (u.getHost() == null) {
            throw new IllegalArgumentException("dataset source '" + url + "' has no host");
        }
        int port = u.getPort() >= 0 ? u.getPort() : "https".equalsIgnoreCase(u.getScheme()) ? 443 : 80;
        if (!allowsHost(u.getHost(), port)) {
            throw new StoreException(StoreException.Kind.FORBIDDEN, "dataset source host " + u.getHost() + ":" + port
                    + " is not allowed on this daemon; " + HOW_HOSTS);
        }
        return u;
    }

    /**
     * The canonical path of a local source (a path or {@code file://} URL) that is a regular file
     * below a data root. Missing files and files outside the roots get the same 403.
     */
    Path localSource(String url) {
        return local(url, false);
    }

    /**
     * The canonical path of a local directory source (an ADIOS2 {@code .bp} directory) below a data
     * root; missing ones, ones outside the roots and ones that are not directories get the same 403.
     */
    Path localDirectory(String url) {
        return local(url, true);
    }

    private Path local(String url, boolean directory) {
        if (dataRoots.isEmpty()) {
            throw new StoreException(StoreException.Kind.FORBIDDEN, "local dataset sources are off on this daemon ('"
                    + url + "'); " + HOW_ROOTS);
        }
        Path p = parseLocal(url);
        Path real;
        try {
            real = p.toRealPath();
        } catch (IOException | SecurityException e) {
            throw refused(url, directory);
        }
        if (!underRoot(real) || !(directory ? Files.isDirectory(real, LinkOption.NOFOLLOW_LINKS)
                : Files.isRegularFile(real, LinkOption.NOFOLLOW_LINKS))) {
            throw refused(url, directory);
        }
        return real;
    }

    private static Path parseLocal(String url) {
        Path p;
        try {
            p = url.startsWith("file:") ? Path.of(URI.create(url)) : Path.of(url);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("dataset source '" + url + "' is not a path or URL");
        }
        if (!p.isAbsolute()) {
            throw new IllegalArgumentException("dataset source '" + url + "' must be an absolute path, a file:// URL "
                    + "or an http(s):// URL");
        }
        return p;
    }

    private boolean underRoot(Path real) {
        for (Path root : dataRoots) {
            try {
                if (real.startsWith(root.toRealPath())) {
                    return true;
                }
            } catch (IOException | SecurityException e) {
                // a root that does not exist (yet) allows nothing
            }
        }
        return false;
    }

    private StoreException refused(String url, boolean directory) {
        return new StoreException(StoreException.Kind.FORBIDDEN, "dataset source '" + url + "' is not a readable "
                + (directory ? "directory" : "file") + " below this daemon's data roots; " + HOW_ROOTS);
    }

    /** One line for the start-up log. */
    public String describe() {
        List<String> roots = new ArrayList<>();
        dataRoots.forEach(r -> roots.add(Files.isDirectory(r) ? r.toString() : r + " (not a directory yet)"));
        return "dataRoots=" + (roots.isEmpty() ? "none" : roots) + " allowSourceHosts="
                + (allowedHosts.isEmpty() ? "none" : allowedHosts) + " sourceTimeouts=" + connectTimeout.toMillis()
                + "ms/" + readTimeout.toMillis() + "ms";
    }
}
