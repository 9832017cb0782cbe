package io.tenplex.daemon;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tenplexd}: the per-worker tensor store daemon. */
@Command(name = "tenplexd", mixinStandardHelpOptions = true, version = "tenplexd 0.1.0",
        description = "Holds a training job's tensors and files in memory and serves them over REST.")
public final class Tenplexd implements Callable<Integer> {
    static { // before the first logger: java.util.logging then keeps its handler through shutdown
        System.setProperty("java.util.logging.manager", DaemonLogManager.class.getName());
    }

    private static final Logger LOG = LoggerFactory.getLogger(Tenplexd.class);

    @Option(names = "--bind", paramLabel = "ADDR", description = "Address to listen on (default: 127.0.0.1).")
    String bind;

    @Option(names = "--port", paramLabel = "PORT", description = "Port to listen on; 0 picks a free one (default: 20010).")
    Integer port;

    @Option(names = "--memory-limit", paramLabel = "SIZE",
            description = "Memory budget for stored bytes, e.g. 8g, 512m, 25%% (default: 50%% of RAM).")
    String memoryLimit;

    @Option(names = "--mount", paramLabel = "DIR", description = "Mount the store's namespace with FUSE at DIR (off by default; needs /dev/fuse).")
    Path mount;

    @Option(names = "--config", paramLabel = "FILE",
            description = "JSON file with any of: bind, port, memoryLimit, mount, token, tokenFile, peers, linkRate, "
                    + "tlsCert, tlsKey, tlsCa, idleTimeout, headTimeout, bodyTimeout, writeTimeout, allowOrigins, "
                    + "preparedTimeout, dataRoots, "
                    + "allowSourceHosts, sourceConnectTimeout, sourceReadTimeout, peerConnections, coordinatorTimeout, shmDir, checkpointDir, streamMemory. "
                    + "Options given here win.")
    Path config;

    @Option(names = "--token", paramLabel = "TOKEN",
            description = "Require 'Authorization: Bearer TOKEN' on every request except /api/v1/health. Visible in the "
                    + "process list: prefer --token-file or TENPLEX_TOKEN_FILE / TENPLEX_TOKEN.")
    String token;

    @Option(names = "--token-file", paramLabel = "FILE",
            description = "Read the bearer token from FILE (mode 600; surrounding white space is ignored).")
    Path tokenFile;

    @Option(names = "--tls-cert", paramLabel = "FILE",
            description = "Serve HTTPS with this PEM certificate chain (needs --tls-key); peers are then reached over "
                    + "https too.")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE", description = "The certificate's unencrypted PKCS#8 PEM key.")
    Path tlsKey;

    @Option(names = "--tls-ca", paramLabel = "FILE",
            description = "PEM CA certificates that peers' certificates must chain to (default: the JDK's trusted CAs).")
    Path tlsCa;

    @Option(names = "--peers", paramLabel = "W=HOST:PORT,...",
            description = "The cluster's daemons by worker number, for reconfigurations whose request names none.")
    String peers;

    @Option(names = "--link-rate", paramLabel = "RATE",
            description = "Every worker's network link rate, e.g. 10gbit or 100mbit. Reconfigurations coordinated here "
                    + "then pace each flow so that all finish with the busiest link (default: unpaced).")
    String linkRate;

    @Option(names = "--idle-timeout", paramLabel = "DURATION",
            description = "Close a connection that waits this long for its next request (default: 120s).")
    String idleTimeout;

    @Option(names = "--head-timeout", paramLabel = "DURATION",
            description = "A request head must arrive within this long of its first byte, else 408 (default: 30s).")
    String headTimeout;

    @Option(names = "--body-timeout", paramLabel = "DURATION",
            description = "Abandon an upload that receives nothing for this long: 408, memory released (default: 60s).")
    String bodyTimeout;

    @Option(names = "--write-timeout", paramLabel = "DURATION",
            description = "Close a connection whose reader takes nothing for this long (default: 120s).")
    String writeTimeout;

    @Option(names = "--prepared-timeout", paramLabel = "DURATION",
            description = "How long a prepared reconfiguration part waits for its commit or abort before it resolves "
                    + "itself by asking the other daemons (default: 60s; a request's preparedTimeoutMillis wins).")
    String preparedTimeout;

    @Option(names = "--allow-origin", paramLabel = "ORIGIN", split = ",",
            description = "A browser origin (e.g. https://ops.example) allowed to call the daemon; requests with any "
                    + "other Origin header get 403 (default: none).")
    java.util.List<String> allowOrigins;

    @Option(names = "--data-root", paramLabel = "DIR",
            description = "A directory below which dataset indexes and sample files may be read (repeatable; default: "
                    + "none, so local dataset sources are refused).")
    java.util.List<Path> dataRoots;

    @Option(names = "--allow-source-host", paramLabel = "HOST[:PORT]",
            description = "A host whose http(s) URLs may be dataset sources or mount peers (repeatable; default: none, "
                    + "loopback included).")
    java.util.List<String> sourceHosts;

    @Option(names = "--source-connect-timeout", paramLabel = "DURATION",
            description = "Connect timeout of dataset source fetches, e.g. 5s, 500ms (default: 5s).")
    String sourceConnectTimeout;

    @Option(names = "--source-read-timeout", paramLabel = "DURATION",
            description = "Longest wait for the next bytes of a dataset source answer (default: 30s).")
    String sourceReadTimeout;

    @Option(names = "--peer-connections", paramLabel = "N",
            description = "Connections kept to each other daemon for reading reconfiguration pieces, 1 to 1024 "
                    + "(default: 8).")
    String peerConnections;

    @Option(names = "--coordinator-timeout", paramLabel = "DURATION",
            description = "How long a reconfiguration's coordinator waits for another daemon to answer one of its "
                    + "calls (send a part, prepare, commit, abort) before the call fails (default: 10m).")
    String coordinatorTimeout;

    @Option(names = "--shm-dir", paramLabel = "DIR",
            description = "Shared memory for trainers on this host: 'none' turns it off (trainers then save and "
                    + "load over REST); otherwise segments are sealed memory files of the daemon, not files in DIR, "
                    + "and DIR is swept for segment files earlier versions left (default: /dev/shm).")
    String shmDir;

    @Option(names = "--checkpoint-dir", paramLabel = "DIR",
            description = "Where complete generations are flushed to disk (L4, the durable tier; differential, the "
                    + "newest 2 kept per job unless a job's tiers say otherwise) and restored from when tenplexd starts "
                    + "(default: none: L4 is off and checkpoints live only in memory, lost with the daemon).")
    Path checkpointDir;

    @Option(names = "--stream-memory", paramLabel = "SIZE",
            description = "Bytes of streamed training samples this daemon holds in its heap, e.g. 2g or 25%% (of the "
                    + "max heap); a push beyond it is answered 429 (push again) or 507 (default: 25%% of the max heap).")
    String streamMemory;

    @Option(names = "--log-level", paramLabel = "LEVEL",
            description = "The least severe log lines written: error, warn, info, debug or trace (default: info).")
    String logLevel;

    @Option(names = "--log-format", paramLabel = "FORMAT",
            description = "text (one line per record) or json (one object per line with ts, level, logger, msg and "
                    + "the message's key=value pairs such as job, step, duration_ms, bytes) (default: text).")
    String logFormat;

    private final CountDownLatch stopped = new CountDownLatch(1);

    @Override
    public Integer call() throws Exception {
        LogSetup.apply(logLevel, logFormat);
        if (token != null) {
            Tokens.warnCommandLine("--token");
        }
        DaemonConfig cfg = DaemonConfig.resolve(given(), DaemonConfig.Given.fromEnv(System.getenv()),
                config == null ? DaemonConfig.Given.none() : DaemonConfig.Given.fromFile(config),
                ConfigValues.physicalRam(), ConfigValues.maxDirectMemory());
        LOG.info("tenplexd starting: {}", cfg.describe());
        Daemon daemon;
        try {
            daemon = Daemon.start(cfg);
        } catch (java.io.IOException e) {
            System.err.println("tenplexd: " + startFailure(e, cfg));
            return 1;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("shutting down");
            daemon.close();
            stopped.countDown();
        }, "tenplexd-shutdown"));
        LOG.info("ready on {}://{}:{}", cfg.tls() == null ? "http" : "https", daemon.address().getHostString(), daemon.address().getPort());
        stopped.await();
        return 0;
    }

    /** Why the daemon did not start; a port in use names the port and the option that changes it. */
    static String startFailure(java.io.IOException e, DaemonConfig cfg) {
        if (e instanceof java.net.BindException || String.valueOf(e.getMessage()).contains("Address already in use")) {
            return "cannot listen on " + cfg.bind() + ":" + cfg.port() + ": the address is already in use (another "
                    + "tenplexd?); stop that process or choose another port with --port";
        }
        return e.getMessage();
    }

    /** The values given on the command line. */
    private DaemonConfig.Given given() {
        return new DaemonConfig.Given(bind, port, memoryLimit, mount, token, peers, linkRate,
                new DaemonConfig.Timeouts(idleTimeout, headTimeout, bodyTimeout, writeTimeout, allowOrigins,
                        preparedTimeout),
                new DaemonConfig.Sources(dataRoots, sourceHosts, sourceConnectTimeout, sourceReadTimeout), tokenFile,
                tlsCert, tlsKey, tlsCa, new DaemonConfig.Tunables(peerConnections, coordinatorTimeout, shmDir,
                checkpointDir, streamMemory));
    }

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new Tenplexd());
        cl.setExecutionExceptionHandler((ex, line, parsed) -> {
            if (ex instanceof IllegalArgumentException) {
                line.getErr().println("tenplexd: " + ex.getMessage());
                return 2;
            }
            throw ex;
        });
        System.exit(cl.execute(args));
    }
}
