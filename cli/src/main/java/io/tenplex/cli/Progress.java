package io.tenplex.cli;

import java.io.PrintStream;

/**
 * A progress bar: redrawn in place with {@code \r} on a terminal; elsewhere (a log file, a pipe) a
 * plain line when the state changes and at most every {@link #QUIET_NANOS}, so a log stays readable.
 */
final class Progress {
    static final long QUIET_NANOS = 10_000_000_000L;
    private static final int WIDTH = 30;

    private final PrintStream out;
    private final boolean terminal;
    private String lastState;
    private long lastLine = Long.MIN_VALUE;
    private boolean drawn;

    Progress(PrintStream out, boolean terminal) {
        this.out = out;
        this.terminal = terminal;
    }

    /** A bar on standard output, redrawn only when it is a terminal. */
    static Progress onStdout(PrintStream out) {
        return new Progress(out, System.console() != null);
    }

    /** Shows {@code done} of {@code total} bytes in {@code state}. */
    void update(long done, long total, String state) {
        String text = bar(done, total) + " " + state;
        if (terminal) {
            out.print("\r" + text + "   ");
            drawn = true;
        } else {
            long now = System.nanoTime();
            if (!state.equals(lastState) || now - lastLine >= QUIET_NANOS) {
                out.println(text);
                lastLine = now;
            }
        }
        lastState = state;
        out.flush();
    }

    /** Ends the bar's line (on a terminal). */
    void finish() {
        if (terminal && drawn) {
            out.println();
        }
    }

    /** {@code [#####.....] 1.50 MiB / 3.00 MiB}; nothing to do (0 of 0) shows an empty bar. */
    static String bar(long done, long total) {
        int filled = total <= 0 ? 0 : (int) Math.min(WIDTH, WIDTH * (double) done / total);
        return "[" + "#".repeat(filled) + ".".repeat(WIDTH - filled) + "] " + Human.bytes(done) + " / "
                + Human.bytes(total);
    }
}
