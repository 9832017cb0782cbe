package io.tenplex.adapters.kubernetes;

import java.util.Map;
import java.util.TreeMap;

/** Label selectors as the adapter's settings take them. */
final class Selectors {
    private Selectors() {
    }

    /** Parses {@code k=v,k2=v2} (equality selectors only). */
    static Map<String, String> parse(String s) {
        Map<String, String> m = new TreeMap<>();
        for (String part : s.split(",")) {
            String p = part.strip();
            int eq = p.indexOf('=');
            String k = eq < 0 ? "" : p.substring(0, eq).strip();
            String v = eq < 0 ? "" : p.substring(eq + 1).replaceFirst("^=", "").strip();
            if (k.isEmpty() || k.endsWith("!") || v.isEmpty() || v.contains("=")) {
                throw new IllegalArgumentException("selector '" + s + "': expected label=value pairs separated by "
                        + "commas (equality selectors only), got '" + p + "'");
            }
            m.put(k, v);
        }
        return m;
    }
}
