package io.tenplex.daemon;

import static io.tenplex.daemon.ConfigValues.duration;
import static io.tenplex.daemon.ConfigValues.first;

import io.tenplex.datasets.SourcePolicy;
import io.tenplex.server.ServerLimits;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The daemon's one typed, validated configuration. Values come from the command line, else from the
 * {@code --config} JSON file, else from the defaults below. Values are parsed by {@link ConfigValues},
 * the file read by {@link ConfigFile}, the token found by {@link Tokens}.
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
 * @param tuning connection and thread counts and the coordinator's call timeout
 */
public record DaemonConfig(String bind, int port, long memoryLimit, String memoryLimitSource, Path mount,
        String token, Map<Integer, InetSocketAddress> peers, long linkRate, ServerLimits limits,
        SourcePolicy sources, Tls tls, Duration preparedTimeout, Tuning tuning) {
    public static final String DEFAULT_BIND = "127.0.0.1";
    public static final int DEFAULT_PORT = 20010;
    /** Default memory budget: this share of physical RAM (within the JVM's direct-memory limit). */
    public static final double DEFAULT_RAM_SHARE = 0.5;
    /** Direct memory kept free for network buffers. */
    public static final long DIRECT_HEADROOM = 256L << 20;
    /** Default wait of a prepared part for its commit or abort (as Jobs'). */
    public static final Duration DEFAULT_PREPARED_TIMEOUT = io.tenplex.jobs.Jobs.DEFAULT_PREPARED_TIMEOUT;

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

    /**
     * Counts and timeouts an operator rarely changes.
     *
     * @param peerConnections connections the peer client keeps to each other daemon
     * @param coordinatorTimeout how long a reconfiguration's coordinator waits for another daemon's
     *     answer to one call (send a part, prepare, commit, abort)
     * @param jobReaderThreads threads reading reconfiguration pieces from source daemons
     * @param restWorkThreads threads doing the REST server's blocking work off the event loop
     * @param datasetLoaderThreads threads loading dataset mounts; 0 = as many as mounts load at once
     * @param peerEventLoopThreads the peer client's event-loop threads
     * @param sharedMemory shared memory for trainers on this host is on (segments are sealed memory
     *     files; this directory is swept for segment files of earlier versions); null: none (trainers
     *     save and load over REST)
     * @param checkpointDir where complete generations are flushed (L4, the durable tier) and restored
     *     from at start; null: none (checkpoints live only in memory)
     * @param streamMemory bytes of streamed samples the daemon holds (heap); 0: a quarter of the max heap
     */
    public record Tuning(int peerConnections, Duration coordinatorTimeout, int jobReaderThreads, int restWorkThreads,
            int datasetLoaderThreads, int peerEventLoopThreads, Path sharedMemory, Path checkpointDir,
            long streamMemory) {
        public static final int MAX_PEER_CONNECTIONS = 1024;
        public static final Path DEFAULT_SHARED_MEMORY = Path.of("/dev/shm");
        public static final Tuning DEFAULTS = new Tuning(8, Duration.ofMinutes(10), 64, 2, 0, 2, DEFAULT_SHARED_MEMORY,
                null);

        /** With the default stream memory. */
        public Tuning(int peerConnections, Duration coordinatorTimeout, int jobReaderThreads, int restWorkThreads,
                int datasetLoaderThreads, int peerEventLoopThreads, Path sharedMemory, Path checkpointDir) {
            this(peerConnections, coordinatorTimeout, jobReaderThreads, restWorkThreads, datasetLoaderThreads,
                    peerEventLoopThreads, sharedMemory, checkpointDir, 0);
        }

        /** Without a checkpoint directory. */
        public Tuning(int peerConnections, Duration coordinatorTimeout, int jobReaderThreads, int restWorkThreads,
                int datasetLoaderThreads, int peerEventLoopThreads, Path sharedMemory) {
            this(peerConnections, coordinatorTimeout, jobReaderThreads, restWorkThreads, datasetLoaderThreads,
                    peerEventLoopThreads, sharedMemory, null);
        }

        /** With shared memory in {@link #DEFAULT_SHARED_MEMORY}. */
        public Tuning(int peerConnections, Duration coordinatorTimeout, int jobReaderThreads, int restWorkThreads,
                int datasetLoaderThreads, int peerEventLoopThreads) {
            this(peerConnections, coordinatorTimeout, jobReaderThreads, restWorkThreads, datasetLoaderThreads,
                    peerEventLoopThreads, DEFAULT_SHARED_MEMORY);
        }

        public Tuning {
            Objects.requireNonNull(coordinatorTimeout, "coordinatorTimeout");
            if (peerConnections < 1 || peerConnections > MAX_PEER_CONNECTIONS) {
                throw new IllegalArgumentException("peer connections " + peerConnections + " out of range (1 to "
                        + MAX_PEER_CONNECTIONS + ")");
            }
            if (coordinatorTimeout.toMillis() < 100 || coordinatorTimeout.toDays() > 1) {
                throw new IllegalArgumentException("coordinator timeout " + coordinatorTimeout
                        + " out of range (100ms to 1 day)");
            }
            if (jobReaderThreads < 1 || restWorkThreads < 1 || datasetLoaderThreads < 0 || peerEventLoopThreads < 1) {
                throw new IllegalArgumentException("thread counts must be positive (dataset loaders: 0 = unbounded)");
            }
            if (streamMemory < 0) {
                throw new IllegalArgumentException("stream memory " + streamMemory + " (expected: >= 0; 0: a quarter "
                        + "of the max heap)");
            }
        }
    }

    /** Without peers. */
    public DaemonConfig(String bind, int port, long memoryLimit, String memoryLimitSource, Path mount, String token) {
        this(bind, port, memoryLimit, memoryLimitSource, mount, token, Map.of(), 0);
    }

    /** Without a link rate. */
    public DaemonConfig(String bind, int port, long memoryLimit, String memoryLimitSource, Path mount, String token,
            Map<Integer, InetSocketAddress> peers) {
        this(bind, port, memoryLimit, memoryLimitSource, mount, token, peers, 0);
    }

    /** With default limits, without dataset sources (local files and URLs refused) and without TLS. */
    public DaemonConfig(String bind, int port, long memoryLimit, String memoryLimitSource, Path mount, String token,
            Map<Integer, InetSocketAddress> peers, long linkRate) {
        this(bind, port, memoryLimit, memoryLimitSource, mount, token, peers, linkRate, ServerLimits.DEFAULTS,
                SourcePolicy.none(), null, DEFAULT_PREPARED_TIMEOUT, Tuning.DEFAULTS);
    }

    /** This configuration with other dataset source rules. */
    public DaemonConfig withSources(SourcePolicy s) {
        return new DaemonConfig(bind, port, memoryLimit, memoryLimitSource, mount, token, peers, linkRate, limits, s,
                tls, preparedTimeout, tuning);
    }

    public DaemonConfig {
        peers = Map.copyOf(peers);
        Objects.requireNonNull(sources, "sources");
        Objects.requireNonNull(tuning, "tuning");
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
        Objects.requireNonNull(limits, "limits");
        if (preparedTimeout.toMillis() < 100 || preparedTimeout.toDays() > 1) {
            throw new IllegalArgumentException("prepared timeout " + preparedTimeout + " out of range (100ms to 1 day)");
        }
    }

    /** Dataset source options as given (null or empty = not given). */
    record Sources(List<Path> dataRoots, List<String> allowHosts, String connectTimeout, String readTimeout) {
        static final Sources NONE = new Sources(null, null, null, null);

        /** These lists replace {@code file}'s; each timeout is taken separately. */
        SourcePolicy resolve(Sources file) {
            String connect = first(connectTimeout, file.connectTimeout, null);
            String read = first(readTimeout, file.readTimeout, null);
            return new SourcePolicy(ConfigValues.nonEmpty(dataRoots, file.dataRoots),
                    ConfigValues.nonEmpty(allowHosts, file.allowHosts),
                    duration("source connect timeout", connect, SourcePolicy.DEFAULT_CONNECT_TIMEOUT),
                    duration("source read timeout", read, SourcePolicy.DEFAULT_READ_TIMEOUT));
        }
    }

    /** {@link Tuning} options as given (null = not given). */
    record Tunables(String peerConnections, String coordinatorTimeout, String shmDir, Path checkpointDir,
            String streamMemory) {
        static final Tunables NONE = new Tunables(null, null, null, null);

        Tunables(String peerConnections, String coordinatorTimeout, String shmDir, Path checkpointDir) {
            this(peerConnections, coordinatorTimeout, shmDir, checkpointDir, null);
        }

        Tunables(String peerConnections, String coordinatorTimeout) {
            this(peerConnections, coordinatorTimeout, null, null);
        }

        Tunables(String peerConnections, String coordinatorTimeout, String shmDir) {
            this(peerConnections, coordinatorTimeout, shmDir, null);
        }

        /** {@code none} turns shared memory off; anything else is a directory. */
        static Path sharedMemory(String given) {
            if (given == null) {
                return Tuning.DEFAULT_SHARED_MEMORY;
            }
            return given.equals("none") ? null : Path.of(given);
        }

        /** These values over {@code file}'s over the defaults. */
        Tuning resolve(Tunables file) {
            Tuning d = Tuning.DEFAULTS;
            return new Tuning(ConfigValues.count("peer connections", first(peerConnections, file.peerConnections, null),
                    1, Tuning.MAX_PEER_CONNECTIONS, d.peerConnections()),
                    duration("coordinator timeout", first(coordinatorTimeout, file.coordinatorTimeout, null),
                            d.coordinatorTimeout()),
                    d.jobReaderThreads(), d.restWorkThreads(), d.datasetLoaderThreads(), d.peerEventLoopThreads(),
                    sharedMemory(first(shmDir, file.shmDir, null)), first(checkpointDir, file.checkpointDir, null),
                    streamMemory(first(streamMemory, file.streamMemory, null)));
        }

        /** {@code --stream-memory}: a size, or a share of the max heap ({@code 25%}); 0 when not given. */
        static long streamMemory(String given) {
            long n = given == null ? 0 : ConfigValues.parseSize(given, Runtime.getRuntime().maxMemory());
            if (given != null && n < 1) {
                throw new IllegalArgumentException("stream memory '" + given + "' (expected: a size of at least 1 byte)");
            }
            return n;
        }
    }

    /** Values as given (null = not given), merged by {@link #resolve}. */
    record Given(String bind, Integer port, String memoryLimit, Path mount, String token, String peers,
            String linkRate, Timeouts timeouts, Sources sources, Path tokenFile, Path tlsCert, Path tlsKey, Path tlsCa,
            Tunables tunables) {
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
            this(bind, port, memoryLimit, mount, token, peers, linkRate, timeouts, sources, null, null, null, null,
                    Tunables.NONE);
        }

        Given(String bind, Integer port, String memoryLimit, Path mount, String token, String peers, String linkRate,
                Path tokenFile, Path tlsCert, Path tlsKey, Path tlsCa) {
            this(bind, port, memoryLimit, mount, token, peers, linkRate, Timeouts.NONE, Sources.NONE, tokenFile, tlsCert,
                    tlsKey, tlsCa, Tunables.NONE);
        }

        static Given none() {
            return new Given(null, null, null, null, null, null, null);
        }

        /** The token from {@code TENPLEX_TOKEN} or {@code TENPLEX_TOKEN_FILE}. */
        static Given fromEnv(Map<String, String> env) {
            String file = env.get(Tokens.ENV_FILE);
            return new Given(null, null, null, null, env.get(Tokens.ENV), null, null,
                    file == null || file.isEmpty() ? null : Path.of(file), null, null, null);
        }

        static Given fromFile(Path file) {
            return ConfigFile.read(file);
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

    /** Command-line values over file values over defaults. */
    static DaemonConfig resolve(Given cli, Given file, long physicalRam, long maxDirect) {
        return resolve(cli, Given.none(), file, physicalRam, maxDirect);
    }

    /**
     * Command-line values over the environment's (the token only) over file values over defaults. A
     * token file is read here: it must exist and not be empty.
     */
    static DaemonConfig resolve(Given cli, Given env, Given file, long physicalRam, long maxDirect) {
        String limitText = first(cli.memoryLimit(), file.memoryLimit(), null);
        return new DaemonConfig(first(cli.bind(), file.bind(), DEFAULT_BIND), first(cli.port(), file.port(),
                DEFAULT_PORT), memoryLimit(limitText, physicalRam, maxDirect),
                limitText != null ? limitText : "default: " + Math.round(DEFAULT_RAM_SHARE * 100)
                        + "% of RAM, within the JVM direct-memory limit",
                first(cli.mount(), file.mount(), null), token(cli, env, file),
                ConfigValues.parsePeers(first(cli.peers(), file.peers(), null)),
                ConfigValues.linkRate(first(cli.linkRate(), file.linkRate(), null)),
                cli.timeouts().resolve(file.timeouts()), cli.sources().resolve(file.sources()),
                Tls.of(first(cli.tlsCert(), file.tlsCert(), null), first(cli.tlsKey(), file.tlsKey(), null),
                        first(cli.tlsCa(), file.tlsCa(), null)),
                duration("prepared timeout", first(cli.timeouts().prepared(), file.timeouts().prepared(), null),
                        DEFAULT_PREPARED_TIMEOUT), cli.tunables().resolve(file.tunables()));
    }

    /** The budget {@code text} gives (a share of RAM by default), within the JVM's direct memory. */
    private static long memoryLimit(String text, long physicalRam, long maxDirect) {
        long ceiling = maxDirect - DIRECT_HEADROOM;
        if (text == null) {
            return Math.min((long) (physicalRam * DEFAULT_RAM_SHARE), ceiling);
        }
        long limit = ConfigValues.parseSize(text, physicalRam);
        if (limit > ceiling) {
            throw new IllegalArgumentException("memory limit " + text + " (" + limit + " bytes) exceeds the "
                    + "JVM's direct-memory limit less " + (DIRECT_HEADROOM >> 20) + " MiB (" + ceiling
                    + " bytes); start the JVM with a larger -XX:MaxDirectMemorySize (bin/tenplexd does)");
        }
        return limit;
    }

    private static String token(Given cli, Given env, Given file) {
        String t = Tokens.pick("--token", cli.token(), "--token-file", cli.tokenFile());
        t = t != null ? t : Tokens.pick(Tokens.ENV, env.token(), Tokens.ENV_FILE, env.tokenFile());
        return t != null ? t : Tokens.pick("token", file.token(), "tokenFile", file.tokenFile());
    }

    /** One line for the start-up log; the token is never printed. */
    String describe() {
        return String.format(Locale.ROOT, "bind=%s port=%d memoryLimit=%.2f GiB (%s) mount=%s token=%s peers=%s "
                + "linkRate=%s timeouts(idle=%ds head=%ds body=%ds write=%ds prepared=%ds coordinator=%ds) "
                + "peerConnections=%d shmDir=%s checkpointDir=%s streamMemory=%s allowedOrigins=%s %s tls=%s",
                bind, port, memoryLimit / (double) (1L << 30), memoryLimitSource,
                mount == null ? "off" : mount, token == null ? "off" : "on", peers.isEmpty() ? "none" : peers.toString(),
                linkRate == 0 ? "unpaced" : String.format(Locale.ROOT, "%.3f Gbit/s", linkRate / 1e9),
                limits.idle().toSeconds(), limits.head().toSeconds(), limits.body().toSeconds(),
                limits.write().toSeconds(), preparedTimeout.toSeconds(), tuning.coordinatorTimeout().toSeconds(),
                tuning.peerConnections(), tuning.sharedMemory() == null ? "none" : tuning.sharedMemory(),
                tuning.checkpointDir() == null ? "none (L4 off)" : tuning.checkpointDir(),
                tuning.streamMemory() == 0 ? "25% of the max heap" : tuning.streamMemory() + " bytes",
                limits.allowedOrigins().isEmpty() ? "none" : limits.allowedOrigins(),
                sources.describe(), tls == null ? "off" : "on (cert " + tls.cert() + ", peers trust "
                        + (tls.ca() == null ? "the JDK's CAs" : tls.ca()) + ")");
    }
}
