package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.function.Consumer;

/**
 * A resource change's events, printed as they happen: a background thread polls the change's status
 * while the ranks train towards its step and save for it, and the run reads on once they have exited.
 * Each event is printed once, when it is first seen.
 */
final class ChangeEvents {
    static final long POLL_MILLIS = 100;

    private final TenplexCli.Target t;
    private final String path;
    private final Consumer<String> print;
    private volatile int shown;
    private Thread poller;

    ChangeEvents(TenplexCli.Target t, String path, Consumer<String> print) {
        this.t = t;
        this.path = path;
        this.print = print;
    }

    /** Starts printing in the background until the change ends or {@link #stopAndRead()}. */
    ChangeEvents start() {
        poller = new Thread(this::poll, "tenplex-run-events");
        poller.setDaemon(true);
        poller.start();
        return this;
    }

    private void poll() {
        try {
            while (!Thread.currentThread().isInterrupted()) {
                String state = read().path("state").asText();
                if (!state.equals("stopping") && !state.equals("reconfiguring")) {
                    return;
                }
                Thread.sleep(POLL_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // the run reads the change's end itself; a failed poll only delays the events
        }
    }

    /** Ends the background printing; the change's status now, its new events printed. */
    JsonNode stopAndRead() throws Exception {
        Thread p = poller;
        if (p != null) {
            p.interrupt();
            p.join();
        }
        return read();
    }

    /** Reads (its events printed as they come) until the change has ended; its final status. */
    JsonNode untilEnded() throws Exception {
        JsonNode s = read();
        while (s.path("state").asText().equals("stopping") || s.path("state").asText().equals("reconfiguring")) {
            Thread.sleep(POLL_MILLIS); // polling the daemon for new events, not waiting for a result
            s = read();
        }
        return s;
    }

    /** The change's status, its events not printed yet printed now. */
    synchronized JsonNode read() throws Exception {
        JsonNode s = t.get(path);
        JsonNode ev = s.path("events");
        for (int i = shown; i < ev.size(); i++) {
            print.accept("  " + ev.get(i).asText());
        }
        shown = Math.max(shown, ev.size());
        return s;
    }
}
