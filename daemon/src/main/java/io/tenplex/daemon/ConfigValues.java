package io.tenplex.daemon;

import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Parses the configuration's values as an operator writes them (durations, sizes, counts, peer
 * lists) into typed values, with errors that name the option and show examples.
 */
final class ConfigValues {
    private ConfigValues() {
    }

    /** Parses {@code 30s}, {@code 500ms}, {@code 2m}, {@code 1h} or plain seconds; {@code dflt} when null. */
    static Duration duration(String what, String text, Duration dflt) {
        if (text == null) {
            return dflt;
        }
        String t = text.trim().toLowerCase(Locale.ROOT);
        try {
            Duration d = parseDuration(t);
            if (d.isNegative() || d.isZero()) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(what + " '" + text + "' is not a positive duration (examples: 30s, "
                    + "500ms, 2m)");
        }
    }

    private static Duration parseDuration(String t) {
        if (t.endsWith("ms")) {
            return Duration.ofMillis(number(t, 2));
        } else if (t.endsWith("s")) {
            return Duration.ofSeconds(number(t, 1));
        } else if (t.endsWith("m")) {
            return Duration.ofMinutes(number(t, 1));
        } else if (t.endsWith("h")) {
            return Duration.ofHours(number(t, 1));
        }
        return Duration.ofSeconds(Long.parseLong(t));
    }

    private static long number(String t, int suffix) {
        return Long.parseLong(t.substring(0, t.length() - suffix).trim());
    }

    /** A whole number from {@code min} to {@code max}; {@code dflt} when null. */
    static int count(String what, String text, int min, int max, int dflt) {
        if (text == null) {
            return dflt;
        }
        try {
            int n = Integer.parseInt(text.trim());
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(what + " '" + text + "' is not a whole number from " + min + " to " + max);
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

    /** Parses {@code 0=host:port,1=host:port} (worker number = daemon address). */
    static Map<Integer, InetSocketAddress> parsePeers(String text) {
        Map<Integer, InetSocketAddress> out = new TreeMap<>();
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
                out.put(Integer.parseInt(kv[0].trim()), new InetSocketAddress(kv[1].substring(0, colon).trim(),
                        Integer.parseInt(kv[1].substring(colon + 1).trim())));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("peer '" + item.trim() + "' is not worker=host:port (example: "
                        + "--peers 0=10.0.0.1:20010,1=10.0.0.2:20010)");
            }
        }
        return out;
    }

    /** A link rate such as {@code 10gbit} in bits/s; 0 (not paced) when null. */
    static long linkRate(String text) {
        return text == null ? 0 : io.tenplex.jobs.reconfigure.FlowRates.parse(text);
    }

    static <T> T first(T a, T b, T c) {
        return a != null ? a : b != null ? b : c;
    }

    /** {@code a} unless null or empty, else {@code b}, else empty. */
    static <T> List<T> nonEmpty(List<T> a, List<T> b) {
        return a != null && !a.isEmpty() ? a : b != null ? b : List.of();
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
}
