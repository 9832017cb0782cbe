package io.tenplex.daemon;

import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How tenplexd writes its log: one line per record on standard error, as text (the shape slf4j-simple
 * printed) or as JSON (one object per line for log collectors, with the message's {@code key=value}
 * pairs also as fields). The daemon logs through slf4j into java.util.logging (slf4j-jdk14).
 */
final class LogSetup {
    /** The levels {@code --log-level} takes. */
    static final String LEVELS = "error, warn, info, debug, trace";
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSZ")
            .withZone(ZoneId.systemDefault());
    private static final Pattern PAIR = Pattern.compile("(?<=^|[\\s(,])([a-z][a-z_]*)=([^\\s,;()]+)");
    private static final Pattern NUMBER = Pattern.compile("-?\\d{1,18}(\\.\\d+)?");
    /** Held so that their levels stay set (java.util.logging keeps loggers weakly). */
    private static final Logger ROOT = Logger.getLogger("");
    private static final Logger NETTY = Logger.getLogger("io.netty");
    /** jHDF announces every HDF5 filter it registers at INFO when the first file is opened: quiet below warn. */
    private static final Logger JHDF = Logger.getLogger("io.jhdf");
    private static final Logger TENPLEX = Logger.getLogger("io.tenplex");

    private LogSetup() {
    }

    /**
     * Sends every record at {@code level} or above to standard error in {@code format}.
     *
     * @throws IllegalArgumentException an unknown level or format
     */
    static void apply(String level, String format) {
        Level l = level(level == null ? "info" : level);
        Formatter f = switch (format == null ? "text" : format.toLowerCase(Locale.ROOT)) {
            case "text" -> new Text();
            case "json" -> new Json();
            default -> throw new IllegalArgumentException("--log-format " + format + ": expected text or json");
        };
        for (var h : ROOT.getHandlers()) {
            ROOT.removeHandler(h);
        }
        ConsoleHandler out = new ConsoleHandler();
        out.setLevel(Level.ALL);
        out.setFormatter(f);
        ROOT.addHandler(out);
        // debug and trace are the daemon's own: the JDK's and Netty's would drown them
        ROOT.setLevel(l.intValue() < Level.INFO.intValue() ? Level.INFO : l);
        TENPLEX.setLevel(l);
        NETTY.setLevel(l.intValue() > Level.WARNING.intValue() ? l : Level.WARNING);
        JHDF.setLevel(l.intValue() > Level.WARNING.intValue() ? l : Level.WARNING);
    }

    static Level level(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "error" -> Level.SEVERE;
            case "warn" -> Level.WARNING;
            case "info" -> Level.INFO;
            case "debug" -> Level.FINE;
            case "trace" -> Level.FINEST;
            default -> throw new IllegalArgumentException("--log-level " + name + ": expected one of " + LEVELS);
        };
    }

    /** slf4j's name of a java.util.logging level. */
    static String name(Level l) {
        int v = l.intValue();
        return v >= 1000 ? "ERROR" : v >= 900 ? "WARN" : v >= 800 ? "INFO" : v >= 500 ? "DEBUG" : "TRACE";
    }

    private static String shortName(String logger) {
        return logger == null ? "" : logger.substring(logger.lastIndexOf('.') + 1);
    }

    private static String stackTrace(Throwable t) {
        java.io.StringWriter w = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(w));
        return w.toString();
    }

    /** {@code 2026-11-23T04:47:13.123+0000 [INFO] Generations - message}. */
    static final class Text extends Formatter {
        @Override
        public String format(LogRecord r) {
            String line = TIME.format(r.getInstant()) + " [" + name(r.getLevel()) + "] " + shortName(r.getLoggerName())
                    + " - " + formatMessage(r) + System.lineSeparator();
            return r.getThrown() == null ? line : line + stackTrace(r.getThrown());
        }
    }

    /** {@code {"ts":…,"level":"INFO","logger":…,"msg":…,"job":"gpt","step":40,…}}, one per line. */
    static final class Json extends Formatter {
        @Override
        public String format(LogRecord r) {
            String msg = formatMessage(r);
            StringBuilder b = new StringBuilder(128 + msg.length()).append("{\"ts\":\"")
                    .append(DateTimeFormatter.ISO_INSTANT.format(Instant.ofEpochMilli(r.getMillis()))).append("\",\"level\":\"")
                    .append(name(r.getLevel())).append("\",\"logger\":");
            quote(b, r.getLoggerName() == null ? "" : r.getLoggerName()).append(",\"msg\":");
            quote(b, msg);
            Matcher m = PAIR.matcher(msg);
            java.util.Set<String> seen = new java.util.HashSet<>(java.util.List.of("ts", "level", "logger", "msg", "error"));
            while (m.find()) {
                if (seen.add(m.group(1))) {
                    quote(b.append(','), m.group(1)).append(':');
                    String v = m.group(2).replaceAll("[:.]+$", ""); // the end of a sentence is no part of it
                    if (NUMBER.matcher(v).matches()) {
                        b.append(v);
                    } else {
                        quote(b, v);
                    }
                }
            }
            if (r.getThrown() != null) {
                quote(b.append(",\"error\":"), stackTrace(r.getThrown()));
            }
            return b.append('}').append(System.lineSeparator()).toString();
        }
    }

    /** Appends {@code s} as a JSON string. */
    static StringBuilder quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"');
    }
}
