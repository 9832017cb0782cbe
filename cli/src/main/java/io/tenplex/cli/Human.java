package io.tenplex.cli;

import java.util.Locale;

/** How the CLI prints sizes and durations for people: {@code 16.0 KiB}, {@code 11.8 GiB}, {@code 25.7 ms}, {@code 2 min 5 s}. */
final class Human {
    private static final String[] UNITS = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

    private Human() {
    }

    /** {@code bytes} in binary units: {@code 512 B}, {@code 16.0 KiB}, {@code 1.18 GiB} (three digits kept). */
    static String bytes(double bytes) {
        if (Double.isNaN(bytes)) {
            return "?";
        }
        double v = Math.abs(bytes);
        int u = 0;
        while (v >= 1024 && u < UNITS.length - 1) {
            v /= 1024;
            u++;
        }
        String sign = bytes < 0 ? "-" : "";
        if (u == 0) {
            return sign + Math.round(v) + " B";
        }
        return sign + String.format(Locale.ROOT, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, UNITS[u]);
    }

    /** A duration given in milliseconds: {@code 0.35 ms}, {@code 25.7 ms}, {@code 1.50 s}, {@code 2 min 5 s}, {@code 3 h 2 min}. */
    static String millis(double ms) {
        if (Double.isNaN(ms) || ms < 0) {
            return "?";
        }
        if (ms < 1000) {
            return String.format(Locale.ROOT, ms < 10 ? "%.2f ms" : ms < 100 ? "%.1f ms" : "%.0f ms", ms);
        }
        double s = ms / 1000;
        if (s < 60) {
            return String.format(Locale.ROOT, s < 10 ? "%.2f s" : "%.1f s", s);
        }
        long whole = Math.round(s);
        if (whole < 3600) {
            return whole / 60 + " min " + whole % 60 + " s";
        }
        return whole / 3600 + " h " + whole % 3600 / 60 + " min";
    }

    /** A count with thousands grouped: {@code 1,234,567}; integral doubles (from Prometheus text) without {@code .0}. */
    static String count(double n) {
        return n == Math.rint(n) && Math.abs(n) < 1e18 ? String.format(Locale.ROOT, "%,d", (long) n)
                : String.format(Locale.ROOT, "%,.2f", n);
    }
}
