package io.tenplex.daemon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import io.tenplex.datasets.SourcePolicy;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import io.tenplex.server.ServerLimits;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The daemon's one typed, validated configuration. Values come from the command line, else from the
 * {@code --config} JSON file, else from the defaults below.
 *
 * @param memoryLimit bytes the store may hold (tensors and files)
 * @param mount FUSE mount point, or null
 * @param token bearer token required by every request except health, or null
 * @param linkRate every worker's link rate in bits/s, for pacing reconfigurations; 0 = not paced
 * @param limits the REST server's timeouts, control-body limits and allowed browser origins
 * @param sources where dataset sources may come from (data roots, allowed hosts) and fetch timeouts
 * @param tls TLS on the REST port and for peer traffic, or null for plain HTTP
 * @param preparedTimeout how long a prepared reconfiguration part waits for its commit or abort
 *     before it resolves itself by asking the other participants (unless a request says)
 */
public record DaemonConfig(String bind, int port, long memoryLimit, String memoryLimitSource, Path mount,
        String token, java.util.Map<Integer, java.net.InetSocketAddress> peers, long linkRate, ServerLimits limits,
        SourcePolicy sources, Tls tls, Duration preparedTimeout) {
    public static final String DEFAULT_BIND = "127.0.0.1";
    public static final int DEFAULT_PORT = 20010;
    /** Default memory budget: this share of physical RAM (within the JVM's direct-memory limit). */
    public static final double DEFAULT_RAM_SHARE = 0.5;
    /** Direct memory kept free for network buffers. */
    public static final long DIRECT_HEADROOM = 256L << 20;
    /** Default wait of a prepared part for its commit or abort (as Jobs'). */
    public static final Duration DEFAULT_PREPARED_TIMEOUT = io.tenplex.jobs.Jobs.DEFAULT_PREPARED_TIMEOUT;
    static final Set<String> FILE_KEYS = Set.of("bind", "port", "memoryLimit", "mount", "token", "peers", "linkRate",
            "idleTimeout", "headTimeout", "bodyTimeout", "writeTimeout", "allowOrigins", "dataRoots", "allowSourceHosts",
            "sourceConnectTimeout", "sourceReadTimeout", "preparedTimeout",
            "tokenFile", "tlsCert", "tlsKey", "tlsCa");

    /**
     * TLS: the REST port serves {@code cert}/{@code key} (PEM), and peers are reached over https
     * trusting {@code ca} (PEM; null: the JDK's trusted CAs).
     */
    public record Tls(Path cert, Path key, Path ca) {
        static Tls of(Path cert, Path key, Path ca) {
            if (cert == null && key == null) {
                if (ca != null) {
                    throw new IllegalArgumentException("--tls-ca needs --tls-cert and --tls-key (a cluster runs TLS on "
                            + "every daemon or on none)");
                }
                return null;
            }
            if (cert == null || key == null) {
                throw new IllegalArgumentException("--tls-cert and --tls-key go together (got only "
                        + (cert == null ? "--tls-key" : "--tls-cert") + ")");
            }
            return new Tls(cert, key, ca);
        }
    }

    /** Without peers. */
    public DaemonConfig(String bind, int port, long memoryLimit, String memoryLimitSource, Path mount, String token) {
        this(bind, port, memoryLimit, memoryLimitSource, mount, token, java.util.Map.of(), 0);
    }

    /** Without a link rate. */
    public DaemonConfig(String bind, int port, long memoryLimit, String memoryLimitSource, Path mount, String token,
            java.util.Map<Integer, java.net.InetSocketAddress> peers) {
        this(bind, port, memoryLimit, memoryLimitSource, mount, token, peers, 0);
    }

    /** With default limits, without dataset sources (local files and URLs refused) and without TLS. */
    public DaemonConfig(String bind, int port, long memoryLimit, String memoryLimitSource, Path mount, String token,
            java.util.Map<Integer, java.net.InetSocketAddress> peers, long linkRate) {
        this(bind, port, memoryLimit, memoryLimitSource, mount, token, peers, linkRate, ServerLimits.DEFAULTS,
                SourcePolicy.none(), null, DEFAULT_PREPARED_TIMEOUT);
    }

    /** This configuration with other dataset source rules. */
    public DaemonConfig withSources(SourcePolicy s) {
        return new DaemonConfig(bind, port, memoryLimit, memoryLimitSource, mount, token, peers, linkRate, limits, s,
                tls, preparedTimeout);
    }

    public DaemonConfig {
        peers = java.util.Map.copyOf(peers);
        java.util.Objects.requireNonNull(sources, "sources");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port " + port + " out of range (expected 0..65535; 0 picks a free port)");
        }
        if (memoryLimit <= 0) {
            throw new IllegalArgumentException("memory limit must be positive, got " + memoryLimit);
        }
        if (linkRate < 0) {
            throw new IllegalArgumentException("link rate must not be negative, got " + linkRate);
        }
        if (bind == null || bind.isBlank()) {
            throw new IllegalArgumentException("bind address must not be empty");
        }
        java.util.Objects.requireNonNull(limits, "limits");
        if (preparedTimeout.toMillis() < 100 || preparedTimeout.toDays() > 1) {
            throw new IllegalArgumentException("prepared timeout " + preparedTimeout + " out of range (100ms to 1 day)");
        }
    }

    /** Dataset source options as given (null or empty = not given). */
    record Sources(java.util.List<Path> dataRoots, java.util.List<String> allowHosts, String connectTimeout,
            String readTimeout) {
        static final Sources NONE = new Sources(null, null, null, null);
    }

    /** Values as given (null = not given), merged by {@link #resolve}. */
    record Given(String bind, Integer port, String memoryLimit, Path mount, String token, String peers,
            String linkRate, Timeouts timeouts, Sources sources, Path tokenFile, Path tlsCert, Path tlsKey, Path tlsCa) {
        Given(String bind, Integer port, String memoryLimit, Path mount, String token) {
            this(bind, port, memoryLimit, mount, token, null, null);
        }

        Given(String bind, Integer port, String memoryLimit, Path mount, String token, String peers) {
            this(bind, port, memoryLimit, mount, token, peers, null);
        }

        Given(String bind, Integer port, String memoryLimit, Path mount, String token, String peers, String linkRate) {
            this(bind, port, memoryLimit, mount, token, peers, linkRate, Timeouts.NONE, Sources.NONE);
        }

        Given(String bind, Integer port, String memoryLimit, Path mount, String token, String peers, String linkRate,
                Timeouts timeouts, Sources sources) {
            this(bind, port, memoryLimit, mount, token, peers, linkRate, timeouts, sources, null, null, null, null);
        }

        Given(String bind, Integer port, String memoryLimit, Path mount, String token, String peers, String linkRate,
                Path tokenFile, Path tlsCert, Path tlsKey, Path tlsCa) {
            this(bind, port, memoryLimit, mount, token, peers, linkRate, Timeouts.NONE, Sources.NONE, tokenFile, tlsCert,
                    tlsKey, tlsCa);
        }

        static Given none() {
            return new Given(null, null, null, null, null, null, null);
        }

        /** The token from {@code TENPLEX_TOKEN} or {@code TENPLEX_TOKEN_FILE}. */
        static Given fromEnv(java.util.Map<String, String> env) {
            String file = env.get(Tokens.ENV_FILE);
            return new Given(null, null, null, null, env.get(Tokens.ENV), null, null,
                    file == null || file.isEmpty() ? null : Path.of(file), null, null, null);
        }

        static Given fromFile(Path file) {
            JsonNode n;
            try {
                n = new ObjectMapper().readTree(Files.readAllBytes(file));
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read config file " + file + ": " + e.getMessage());
            }
            if (n == null || !n.isObject()) {
                throw new IllegalArgumentException("config file " + file + " must hold a JSON object");
            }
            for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
                String k = it.next();
                if (!FILE_KEYS.contains(k)) {
                    throw new IllegalArgumentException("config file " + file + ": unknown key '" + k + "' (expected one of "
                            + FILE_KEYS + ")");
                }
            }
            return new Given(text(n, "bind"), n.has("port") ? n.get("port").asInt() : null,
                    n.has("memoryLimit") ? n.get("memoryLimit").asText() : null,
                    n.has("mount") ? Path.of(n.get("mount").asText()) : null, text(n, "token"), text(n, "peers"),
                    text(n, "linkRate"), new Timeouts(text(n, "idleTimeout"), text(n, "headTimeout"),
                            text(n, "bodyTimeout"), text(n, "writeTimeout"), list(n, "allowOrigins", file),
                            text(n, "preparedTimeout")),
                    new Sources(list(n, "dataRoots", file).stream().map(Path::of).toList(),
                            list(n, "allowSourceHosts", file), text(n, "sourceConnectTimeout"),
                            text(n, "sourceReadTimeout")),
                    path(n, "tokenFile"), path(n, "tlsCert"), path(n, "tlsKey"), path(n, "tlsCa"));
        }

        private static java.util.List<String> list(JsonNode n, String k, Path file) {
            if (!n.has(k)) {
                return java.util.List.of();
            }
            if (!n.get(k).isArray()) {
                throw new IllegalArgumentException("config file " + file + ": '" + k + "' must be an array of strings");
            }
            java.util.List<String> out = new java.util.ArrayList<>();
            n.get(k).forEach(x -> out.add(x.asText()));
            return out;
        }

        private static String text(JsonNode n, String k) {
            return n.has(k) ? n.get(k).asText() : null;
        }

        private static Path path(JsonNode n, String k) {
            return n.has(k) ? Path.of(n.get(k).asText()) : null;
        }
    }

    /** The server's timeouts as given ({@code 30s}, {@code 500ms}, {@code 2m}), and allowed origins (comma-separated). */
    record Timeouts(String idle, String head, String body, String write, List<String> origins, String prepared) {
        static final Timeouts NONE = new Timeouts(null, null, null, null, null, null);

        Timeouts(String idle, String head, String body, String write, List<String> origins) {
            this(idle, head, body, write, origins, null);
        }

        /** These values over {@code file}'s over the defaults. */
        ServerLimits resolve(Timeouts file) {
            ServerLimits d = ServerLimits.DEFAULTS;
            List<String> o = origins != null && !origins.isEmpty() ? origins : file.origins;
            return d.withTimeouts(duration("idle timeout", first(idle, file.idle, null), d.idle()),
                    duration("head timeout", first(head, file.head, null), d.head()),
                    duration("body timeout", first(body, file.body, null), d.body()),
                    duration("write timeout", first(write, file.write, null), d.write()))
                    .withAllowedOrigins(o == null ? List.of() : o);
        }
    }

    /** Parses {@code 30s}, {@code 500ms}, {@code 2m}, {@code 1h} or plain seconds. */
    static Duration duration(String what, String text, Duration dflt) {
        if (text == null) {
            return dflt;
        }
        String t = text.trim().toLowerCase(Locale.ROOT);
        try {
            Duration d;
            if (t.endsWith("ms")) {
                d = Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2).trim()));
            } else if (t.endsWith("s")) {
                d = Duration.ofSeconds(Long.parseLong(t.substring(0, t.length() - 1).trim()));
            } else if (t.endsWith("m")) {
                d = Duration.ofMinutes(Long.parseLong(t.substring(0, t.length() - 1).trim()));
            } else if (t.endsWith("h")) {
                d = Duration.ofHours(Long.parseLong(t.substring(0, t.length() - 1).trim()));
            } else {
                d = Duration.ofSeconds(Long.parseLong(t));
            }
            if (d.isNegative() || d.isZero()) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(what + " '" + text + "' is not a positive duration (examples: 30s, "
                    + "500ms, 2m)");
        }
    }

    /** Command-line values over file values over defaults. */
    static DaemonConfig resolve(Given cli, Given file, long physicalRam, long maxDirect) {
        return resolve(cli, Given.none(), file, physicalRam, maxDirect);
    }

    /**
     * Command-line values over the environment's (the token only) over file values over defaults. A
     * token file is read here: it must exist and not be empty.
     */
    static DaemonConfig resolve(Given cli, Given env, Given file, long physicalRam, long maxDirect) {
        String bind = first(cli.bind(), file.bind(), DEFAULT_BIND);
        int port = first(cli.port(), file.port(), DEFAULT_PORT);
        String limitText = first(cli.memoryLimit(), file.memoryLimit(), null);
        long ceiling = maxDirect - DIRECT_HEADROOM;
        long limit;
        String source;
        if (limitText == null) {
            limit = Math.min((long) (physicalRam * DEFAULT_RAM_SHARE), ceiling);
            source = "default: " + Math.round(DEFAULT_RAM_SHARE * 100) + "% of RAM, within the JVM direct-memory limit";
        } else {
            limit = parseSize(limitText, physicalRam);
            source = limitText;
            if (limit > ceiling) {
                throw new IllegalArgumentException("memory limit " + limitText + " (" + limit + " bytes) exceeds the "
                        + "JVM's direct-memory limit less " + (DIRECT_HEADROOM >> 20) + " MiB (" + ceiling
                        + " bytes); start the JVM with a larger -XX:MaxDirectMemorySize (bin/tenplexd does)");
            }
        }
        return new DaemonConfig(bind, port, limit, source, first(cli.mount(), file.mount(), null),
                token(cli, env, file), parsePeers(first(cli.peers(), file.peers(), null)),
                linkRate(first(cli.linkRate(), file.linkRate(), null)), cli.timeouts().resolve(file.timeouts()),
                sources(cli.sources(), file.sources()), Tls.of(first(cli.tlsCert(), file.tlsCert(), null),
                        first(cli.tlsKey(), file.tlsKey(), null), first(cli.tlsCa(), file.tlsCa(), null)),
                duration("prepared timeout", first(cli.timeouts().prepared(), file.timeouts().prepared(), null),
                        DEFAULT_PREPARED_TIMEOUT));
    }

    /** Lists from the command line replace the file's; each timeout is taken separately. */
    static SourcePolicy sources(Sources cli, Sources file) {
        java.util.List<Path> roots = nonEmpty(cli.dataRoots(), file.dataRoots());
        java.util.List<String> hosts = nonEmpty(cli.allowHosts(), file.allowHosts());
        String connect = first(cli.connectTimeout(), file.connectTimeout(), null);
        String read = first(cli.readTimeout(), file.readTimeout(), null);
        return new SourcePolicy(roots, hosts,
                duration("source connect timeout", connect, SourcePolicy.DEFAULT_CONNECT_TIMEOUT),
                duration("source read timeout", read, SourcePolicy.DEFAULT_READ_TIMEOUT));
    }

    private static <T> java.util.List<T> nonEmpty(java.util.List<T> a, java.util.List<T> b) {
        return a != null && !a.isEmpty() ? a : b != null ? b : java.util.List.of();
    }

    private static String token(Given cli, Given env, Given file) {
        String t = Tokens.pick("--token", cli.token(), "--token-file", cli.tokenFile());
        t = t != null ? t : Tokens.pick(Tokens.ENV, env.token(), Tokens.ENV_FILE, env.tokenFile());
        return t != null ? t : Tokens.pick("token", file.token(), "tokenFile", file.tokenFile());
    }

    private static long linkRate(String text) {
        return text == null ? 0 : io.tenplex.jobs.FlowRates.parse(text);
    }

    /** Parses {@code 0=host:port,1=host:port} (worker number = daemon address). */
    static java.util.Map<Integer, java.net.InetSocketAddress> parsePeers(String text) {
        java.util.Map<Integer, java.net.InetSocketAddress> out = new java.util.TreeMap<>();
        if (text == null || text.isBlank()) {
            return out;
        }
        for (String item : text.split(",")) {
            String[] kv = item.trim().split("=", 2);
            int colon = kv.length == 2 ? kv[1].lastIndexOf(':') : -1;
            try {
                if (colon < 0) {
                    throw new NumberFormatException();
                }
                out.put(Integer.parseInt(kv[0].trim()), new java.net.InetSocketAddress(kv[1].substring(0, colon).trim(),
                        Integer.parseInt(kv[1].substring(colon + 1).trim())));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("peer '" + item.trim() + "' is not worker=host:port (example: "
                        + "--peers 0=10.0.0.1:20010,1=10.0.0.2:20010)");
            }
        }
        return out;
    }

    private static <T> T first(T a, T b, T c) {
        return a != null ? a : b != null ? b : c;
    }

    /** Parses {@code 4g}, {@code 512MiB}, {@code 1073741824} or {@code 25%} (of RAM). */
    static long parseSize(String text, long physicalRam) {
        String t = text.trim().toLowerCase(Locale.ROOT).replace("ib", "").replace("b", "");
        try {
            if (t.endsWith("%")) {
                double pct = Double.parseDouble(t.substring(0, t.length() - 1));
                if (pct <= 0 || pct > 100) {
                    throw new NumberFormatException();
                }
                return (long) (physicalRam * pct / 100);
            }
            long mult = switch (t.isEmpty() ? ' ' : t.charAt(t.length() - 1)) {
                case 'k' -> 1L << 10;
                case 'm' -> 1L << 20;
                case 'g' -> 1L << 30;
                case 't' -> 1L << 40;
                default -> 1;
            };
            String num = mult == 1 ? t : t.substring(0, t.length() - 1);
            return (long) (Double.parseDouble(num) * mult);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("memory limit '" + text + "' is not a size (examples: 8g, 512m, "
                    + "1073741824, 25%)");
        }
    }

    static long physicalRam() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
    }

    /** The JVM's direct-memory limit ({@code -XX:MaxDirectMemorySize}, else the heap limit). */
    static long maxDirectMemory() {
        for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("-XX:MaxDirectMemorySize=")) {
                return parseSize(arg.substring("-XX:MaxDirectMemorySize=".length()), physicalRam());
            }
        }
        return Runtime.getRuntime().maxMemory();
    }

    /** One line for the start-up log; the token is never printed. */
    String describe() {
        return String.format(Locale.ROOT, "bind=%s port=%d memoryLimit=%.2f GiB (%s) mount=%s token=%s peers=%s "
                + "linkRate=%s timeouts(idle=%ds head=%ds body=%ds write=%ds prepared=%ds) allowedOrigins=%s %s tls=%s",
                bind, port,
                memoryLimit / (double) (1L << 30), memoryLimitSource,
                mount == null ? "off" : mount, token == null ? "off" : "on", peers.isEmpty() ? "none" : peers.toString(),
                linkRate == 0 ? "unpaced" : String.format(Locale.ROOT, "%.3f Gbit/s", linkRate / 1e9),
                limits.idle().toSeconds(), limits.head().toSeconds(), limits.body().toSeconds(),
                limits.write().toSeconds(), preparedTimeout.toSeconds(),
                limits.allowedOrigins().isEmpty() ? "none" : limits.allowedOrigins(), sources.describe(), tls == null ? "off" : "on (cert " + tls.cert() + ", peers trust "
                        + (tls.ca() == null ? "the JDK's CAs" : tls.ca()) + ")");
    }
}
