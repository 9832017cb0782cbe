package io.tenplex.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.tenplex.client.TenplexException;
import io.tenplex.store.StoreException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import picocli.CommandLine;

/**
 * How the CLI reports a user's mistake: one line on standard error ({@code tenplex: what is wrong;
 * what to do}) and exit status 2, never a stack trace. Anything else (a bug) keeps its stack trace.
 */
final class CliErrors implements CommandLine.IExecutionExceptionHandler {
    /** Exit status of a user's mistake or a refusal, as picocli's for a bad option. */
    static final int USAGE = 2;

    @Override
    public int handleExecutionException(Exception ex, CommandLine line, CommandLine.ParseResult parsed)
            throws Exception {
        String message = message(ex);
        if (message == null) {
            throw ex;
        }
        line.getErr().println("tenplex: " + message);
        line.getErr().flush();
        return USAGE;
    }

    /** The one line for a known mistake, or null for anything else. */
    static String message(Throwable ex) {
        Throwable e = ex instanceof UncheckedIOException && ex.getCause() != null ? ex.getCause() : ex;
        if (e instanceof JsonProcessingException j) {
            return "invalid JSON: " + json(j) + " (check the file's syntax, e.g. with python3 -m json.tool)";
        }
        if (e instanceof NoSuchFileException f) {
            return f.getFile() + ": no such file (check the path; relative paths start at " + cwd() + ")";
        }
        if (e instanceof AccessDeniedException f) {
            return f.getFile() + ": permission denied (check the file's permissions)";
        }
        if (e instanceof FileSystemException f) {
            return f.getFile() + ": " + (f.getReason() != null ? f.getReason() : "cannot be read");
        }
        if (e instanceof TenplexCli.ConnectionLost) {
            return e.getMessage();
        }
        if (e instanceof TenplexException t) {
            return t.getMessage();
        }
        if (e instanceof IllegalArgumentException) {
            return e.getMessage();
        }
        if (e instanceof StoreException s && s.kind() == StoreException.Kind.BAD_REQUEST) {
            return s.getMessage(); // a name or path refused before anything was sent, e.g. a bad job name
        }
        return null;
    }

    /** Jackson's own message without the source excerpt, with the line and column. */
    static String json(JsonProcessingException j) {
        String where = j.getLocation() == null ? "" : " at line " + j.getLocation().getLineNr() + ", column "
                + j.getLocation().getColumnNr();
        String m = j.getOriginalMessage();
        int nl = m.indexOf('\n');
        return (nl >= 0 ? m.substring(0, nl) : m) + where;
    }

    private static Path cwd() {
        return Path.of("").toAbsolutePath();
    }
}
