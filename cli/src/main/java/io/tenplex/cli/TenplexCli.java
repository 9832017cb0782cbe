package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.Tokens;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.server.peer.DaemonLink;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/** {@code tenplex}: the operator's command line for a running daemon. */
@Command(name = "tenplex", mixinStandardHelpOptions = true, version = "tenplex 0.1.0",
        scope = CommandLine.ScopeType.INHERIT, // every subcommand answers --help, -h (and --version)
        description = "Talk to tenplexd daemons: status, listings, reconfigurations, and a local demo.",
        subcommands = {CommandLine.HelpCommand.class, TenplexCli.Status.class, TenplexCli.Ls.class, JobsCli.class, TenplexCli.Reconfigure.class,
            TenplexCli.PlanCmd.class, DatasetCli.class, RunCli.class, ResizeCli.class, CancelCli.class, RmCli.class, KubernetesCli.class,
            StateCli.Verify.class,
            StateCli.ExportCmd.class, Demo.class})
public final class TenplexCli implements Callable<Integer> {
    static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public Integer call() {
        new CommandLine(this).usage(System.out);
        return 0;
    }

    /** Options every command that talks to a daemon takes. */
    static class Target {
        @Option(names = "--addr", defaultValue = "http://127.0.0.1:20010", description = "Daemon address (default: ${DEFAULT-VALUE}).")
        String addr;

        @Option(names = "--token", description = "Bearer token of the daemon; visible in the process list, so prefer "
                + "--token-file, TENPLEX_TOKEN_FILE or TENPLEX_TOKEN.")
        String token;

        @Option(names = "--token-file", paramLabel = "FILE", description = "File holding the bearer token (or "
                + "TENPLEX_TOKEN_FILE).")
        Path tokenFile;

        @Option(names = "--tls-ca", paramLabel = "FILE", description = "PEM CA certificates to trust for an https:// "
                + "--addr (or TENPLEX_CA; default: the JDK's trusted CAs).")
        Path tlsCa;

        private DaemonLink link;

        /** The token (options over the environment), the trusted CAs and one HTTP client; resolved once. */
        synchronized DaemonLink link() {
            if (link == null) {
                if (token != null && !token.isEmpty()) {
                    Tokens.warnCommandLine("--token");
                }
                String t = Tokens.forClient(token, tokenFile, System.getenv());
                Path ca = tlsCa();
                link = ca != null ? DaemonLink.tls(ca, t) : DaemonLink.plain(t);
            }
            return link;
        }

        /** The bearer token, or null. */
        String token() {
            return link().token();
        }

        /** The CA file to trust ({@code --tls-ca}, else {@code TENPLEX_CA}), or null. */
        Path tlsCa() {
            String env = System.getenv("TENPLEX_CA");
            return tlsCa != null ? tlsCa : env == null || env.isEmpty() ? null : Path.of(env);
        }

        /** The daemon's address with its scheme ({@code --addr} without one: the link's). */
        String base() {
            return uri("").toString();
        }

        /** A request to {@code pathAndQuery} of the daemon, with its {@code Authorization} header. */
        HttpRequest.Builder request(String pathAndQuery) {
            return link().authorize(HttpRequest.newBuilder(uri(pathAndQuery)));
        }

        /** {@code --addr} and a path: {@code host:port} takes the link's scheme, as the Python client does. */
        java.net.URI uri(String pathAndQuery) {
            java.net.URI u;
            try {
                u = link().uri(addr.strip(), pathAndQuery);
            } catch (IllegalArgumentException e) {
                u = null;
            }
            if (u == null || u.getHost() == null || !(u.getScheme().equals("http") || u.getScheme().equals("https"))) {
                throw new IllegalArgumentException("--addr " + addr + " is not a daemon address; give host:port or "
                        + "http(s)://host:port, e.g. --addr 127.0.0.1:20010");
            }
            return u;
        }

        HttpResponse<String> send(HttpRequest.Builder b) throws IOException, InterruptedException {
            try {
                return link().http().send(b.build(), HttpResponse.BodyHandlers.ofString());
            } catch (java.net.ConnectException e) {
                throw new IllegalArgumentException("cannot connect to " + addr + " (is tenplexd running?)");
            } catch (java.net.http.HttpTimeoutException e) {
                throw e;
            } catch (IOException e) { // e.g. the daemon ended (killed, restarted) while it had the request
                HttpRequest r = b.build();
                throw new ConnectionLost("lost the connection to " + addr + " during " + r.method() + " " + r.uri().getPath()
                        + " (did tenplexd end or restart?): " + e.getMessage(), e);
            }
        }

        JsonNode get(String path) throws IOException, InterruptedException {
            return check(send(request(path)));
        }

        JsonNode post(String path, String body) throws IOException, InterruptedException {
            return check(send(request(path).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body))));
        }

        /** Deletes {@code path}; the answer is not checked. */
        HttpResponse<String> delete(String path) throws IOException, InterruptedException {
            return send(request(path).DELETE());
        }

        private static JsonNode check(HttpResponse<String> r) throws IOException {
            if (r.statusCode() >= 300) {
                throw new IllegalArgumentException("daemon answered " + r.statusCode() + ": " + r.body().strip());
            }
            return JSON.readTree(r.body());
        }
    }

    @Command(name = "status", description = "Health and what the daemon holds.")
    static final class Status implements Callable<Integer> {
        @CommandLine.Mixin
        Target t;

        @Override
        public Integer call() throws Exception {
            JsonNode h = t.get("/api/v1/health");
            JsonNode root = t.get("/api/v1/dirs/");
            int n = root.path("entries").size();
            System.out.println(t.addr + ": " + h.path("status").asText() + ", " + n + " top-level "
                    + (n == 1 ? "entry" : "entries"));
            HttpResponse<String> m = t.send(t.request("/metrics"));
            for (String line : m.body().split("\n")) {
                if (line.startsWith("tenplex_store_")) {
                    System.out.println("  " + storeLine(line));
                }
            }
            return 0;
        }

        /** {@code tenplex_store_used_bytes 1.2638255104E10} as {@code store used bytes: 11.8 GiB}. */
        static String storeLine(String metric) {
            int sp = metric.lastIndexOf(' ');
            String name = metric.substring(0, sp).substring("tenplex_".length());
            double v;
            try {
                v = Double.parseDouble(metric.substring(sp + 1));
            } catch (NumberFormatException e) {
                return metric;
            }
            return name.replace('_', ' ') + ": " + (name.endsWith("_bytes") ? Human.bytes(v) : Human.count(v));
        }
    }

    @Command(name = "ls", description = "List a directory of the daemon's namespace.")
    static final class Ls implements Callable<Integer> {
        @CommandLine.Mixin
        Target t;

        @Parameters(index = "0", defaultValue = "/", description = "Path (default: /).")
        String path;

        @Option(names = {"-r", "--recursive"}, description = "Every file and tensor below the path.")
        boolean recursive;

        @Override
        public Integer call() throws Exception {
            String p = path.startsWith("/") ? path : "/" + path;
            JsonNode l = t.get("/api/v1/dirs" + encode(p) + (recursive ? "?recursive=true" : ""));
            for (JsonNode e : l.path("entries")) {
                String type = e.path("type").asText();
                String what = switch (type) {
                    case "dir" -> e.path("children").asText() + " entries";
                    case "tensor" -> e.path("dtype").asText() + e.path("shape").toString();
                    default -> Human.bytes(e.path("size").asLong());
                };
                System.out.printf(Locale.ROOT, "%-7s %-22s %s%n", type, what, recursive ? e.path("path").asText()
                        : e.path("name").asText());
            }
            return 0;
        }
    }

    static String encode(String path) {
        StringBuilder b = new StringBuilder();
        for (String part : path.split("/")) {
            if (!part.isEmpty()) {
                b.append('/').append(URLEncoder.encode(part, StandardCharsets.UTF_8).replace("+", "%20"));
            }
        }
        return b.length() == 0 ? "/" : b.toString();
    }

    @Command(name = "reconfigure", description = "Reconfigure a job (this daemon coordinates) and follow it to the end.")
    static final class Reconfigure implements Callable<Integer> {
        @CommandLine.Mixin
        Target t;

        @Option(names = "--job", required = true, description = "Job name.")
        String job;

        @Option(names = "--request", required = true, description = "JSON file: model (optional), from, to, daemons, step.")
        Path request;

        @Option(names = "--central", description = "Route every piece through one daemon (the Tenplex-Central baseline).")
        boolean central;

        @Override
        public Integer call() throws Exception {
            JsonNode req = readJson(request, "--request");
            if (central && req instanceof com.fasterxml.jackson.databind.node.ObjectNode o) {
                o.put("central", true);
            }
            String body = JSON.writeValueAsString(req);
            JsonNode started = t.post(new JobLayout(job).apiReconfigure(false), body);
            JsonNode end = follow(t, started.path("status").asText(), System.out);
            return end.path("state").asText().equals("committed") ? 0 : 1;
        }
    }

    @Command(name = "plan", description = "Show the plan of a reconfiguration without moving bytes.")
    static final class PlanCmd implements Callable<Integer> {
        @CommandLine.Mixin
        Target t;

        @Option(names = "--job", required = true, description = "Job name.")
        String job;

        @Option(names = "--request", required = true, description = "JSON file, as for reconfigure.")
        Path request;

        @Option(names = "--dry-run", required = true, description = "Only plan (required: plans never move bytes here).")
        boolean dryRun;

        @Override
        public Integer call() throws Exception {
            JsonNode p = t.post(new JobLayout(job).apiReconfigure(true), readJson(request, "--request").toString());
            for (JsonNode line : p.path("plan")) {
                System.out.println(line.asText());
            }
            return 0;
        }
    }

    /** Polls a reconfiguration, drawing a progress bar, until it ends; prints the report. */
    static JsonNode follow(Target t, String status, PrintStream out) throws Exception {
        JsonNode s;
        Progress progress = Progress.onStdout(out);
        while (true) {
            s = t.get(status);
            long done = 0;
            long total = 0;
            for (Iterator<JsonNode> it = s.path("workers").elements(); it.hasNext(); ) {
                JsonNode w = it.next();
                done += w.path("bytesDone").asLong();
                total += w.path("bytesTotal").asLong();
            }
            String state = s.path("state").asText();
            progress.update(done, total, state);
            if (state.equals("committed") || state.equals("aborted")) {
                break;
            }
            Thread.sleep(100); // the CLI polls a running reconfiguration; nothing is synchronised by this wait
        }
        progress.finish();
        out.println(s.path("from").asText() + " -> " + s.path("to").asText() + ": " + s.path("state").asText()
                + (s.has("error") ? " (" + s.path("error").asText() + ")" : ""));
        JsonNode r = s.path("report");
        out.printf(Locale.ROOT, "  on-device %s, intra-worker %s, inter-worker %s (lower bound %s), kept %s%n",
                Human.bytes(r.path("onDeviceBytes").asLong()), Human.bytes(r.path("intraWorkerBytes").asLong()),
                Human.bytes(r.path("interWorkerBytes").asLong()), Human.bytes(r.path("lowerBoundBytes").asLong()),
                Human.bytes(r.path("keptBytes").asLong()));
        out.println("  phases: " + phases(s.path("phaseMillis")));
        for (Map.Entry<String, JsonNode> w : iterable(s.path("workers").fields())) {
            out.printf(Locale.ROOT, "  worker %s: %s local, %s remote, %d retries%n", w.getKey(),
                    Human.bytes(w.getValue().path("localBytes").asLong()), Human.bytes(w.getValue().path("remoteBytes").asLong()),
                    w.getValue().path("retries").asInt());
        }
        return s;
    }

    private static <T> Iterable<T> iterable(Iterator<T> it) {
        return () -> it;
    }

    /** {@code {"plan": 12, "transfer": 3400}} as {@code plan 12.0 ms, transfer 3.40 s}. */
    static String phases(JsonNode millis) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, JsonNode> e : iterable(millis.fields())) {
            b.append(b.length() > 0 ? ", " : "").append(e.getKey()).append(' ').append(Human.millis(e.getValue().asDouble()));
        }
        return b.length() == 0 ? "none" : b.toString();
    }

    /** The JSON in {@code file} (given as {@code option}); a missing file or bad JSON is a one-line error. */
    static JsonNode readJson(Path file, String option) throws IOException {
        String text = readText(file, option);
        try {
            return JSON.readTree(text);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException(option + " " + file + " is not valid JSON: " + CliErrors.json(e)
                    + "; fix the file (python3 -m json.tool " + file + " shows where)");
        }
    }

    /** The text of {@code file} (given as {@code option}); a missing file is a one-line error. */
    static String readText(Path file, String option) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException(option + " " + file + ": " + (Files.exists(file) ? "not a regular file"
                    : "no such file") + " (relative paths start at " + Path.of("").toAbsolutePath() + ")");
        }
        return Files.readString(file);
    }

    /** The command line with its error handling: a user's mistake or a refusal prints one line, exit status 2. */
    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new TenplexCli());
        cl.setExecutionExceptionHandler(new CliErrors());
        return cl;
    }

    /** A connection to the daemon that broke under a request: said in one line ({@link CliErrors}). */
    static final class ConnectionLost extends IOException {
        ConnectionLost(String message, IOException cause) {
            super(message, cause);
        }
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }
}
