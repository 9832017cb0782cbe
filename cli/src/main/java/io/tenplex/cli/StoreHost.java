package io.tenplex.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The rendezvous store {@code tenplex run} hosts before any rank starts: a c10d {@code TCPStore} in a
 * small Python helper ({@code clients/python/tenplex/launchers/store_host.py}, carried in this jar and run with
 * {@code -c}), driven over its stdin and stdout one line at a time. Ranks connect as clients
 * ({@code TORCHELASTIC_USE_AGENT_STORE=True}), so none waits for rank 0's store to listen; live
 * reconfiguration hands the ranks their roles through it, signed ({@link RoleSigner}; docs/LIVE.md). It listens
 * on 127.0.0.1 only where torch's TCPStore takes a socket the helper bound; on torch 1.13 it listens on every
 * interface and says so on stderr (its first line, {@code port N listen ADDR}, says where).
 */
final class StoreHost implements AutoCloseable {
    private static final long START_SECONDS = 60;

    private final Process process;
    private final BufferedReader answers;
    private final Writer requests;
    private final int port;

    private StoreHost(Process process, BufferedReader answers, Writer requests, int port) {
        this.process = process;
        this.answers = answers;
        this.requests = requests;
        this.port = port;
    }

    /** Starts the helper with {@code python} (an interpreter with torch); waits until it listens. */
    static StoreHost start(String python) throws IOException {
        Process p;
        try {
            p = new ProcessBuilder(python, "-c", script(), "--host", "127.0.0.1")
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot start the rendezvous store with '" + python + "': "
                    + e.getMessage() + "; name an interpreter with torch with --store-python");
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        Writer w = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
        String first = in.readLine();
        if (first == null || !first.startsWith("port ")) {
            p.destroyForcibly();
            throw new IllegalArgumentException("the rendezvous store (" + python + " with torch.distributed.TCPStore) "
                    + "did not start: it answered " + (first == null ? "nothing" : "'" + first + "'")
                    + "; name an interpreter with torch with --store-python");
        }
        return new StoreHost(p, in, w, Integer.parseInt(first.substring(5).strip().split(" ")[0]));
    }

    /**
     * The store for relaunch mode when {@code python} can host one, else null (rank 0 hosts it, as
     * before; {@code out} says why).
     */
    static StoreHost startOptional(String python, java.io.PrintStream out) throws IOException {
        try {
            return start(python);
        } catch (IllegalArgumentException e) {
            out.println("tenplex run: rank 0 hosts the rendezvous store (" + e.getMessage() + ")");
            return null;
        }
    }

    private static String script() throws IOException {
        try (InputStream s = StoreHost.class.getResourceAsStream("store_host.py")) {
            if (s == null) {
                throw new IllegalStateException("store_host.py is missing from the tenplex jar");
            }
            return new String(s.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    int port() {
        return port;
    }

    /** Sets {@code key} (no spaces or line breaks) to {@code value} (one line). */
    synchronized void set(String key, String value) throws IOException {
        String a = ask("set " + key + " " + value);
        if (!a.equals("ok")) {
            throw new IOException("the rendezvous store refused to set " + key + ": " + a);
        }
    }

    /** The counter {@code key} (0 when no rank raised it yet). */
    synchronized long count(String key) throws IOException {
        String a = ask("count " + key);
        try {
            return Long.parseLong(a);
        } catch (NumberFormatException e) {
            throw new IOException("the rendezvous store answered '" + a + "' for the counter " + key, e);
        }
    }

    private String ask(String line) throws IOException {
        if (line.indexOf('\n') >= 0) {
            throw new IllegalArgumentException("a store request is one line: " + line);
        }
        requests.write(line + "\n");
        requests.flush();
        String a = answers.readLine();
        if (a == null) {
            throw new IOException("the rendezvous store has exited (exit " + exit() + ")");
        }
        return a;
    }

    private String exit() {
        return process.isAlive() ? "none yet" : Integer.toString(process.exitValue());
    }

    /** Ends the helper: its input closes (it exits), else it is ended after a few seconds. */
    @Override
    public void close() {
        try {
            requests.close();
        } catch (IOException e) {
            // already gone
        }
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /** The interpreter of {@code command} when it is a Python (its file name starts with "python"), else null. */
    static String pythonOf(List<String> command) {
        String first = command.get(0);
        String name = first.substring(first.lastIndexOf('/') + 1);
        return name.startsWith("python") ? first : null;
    }
}
