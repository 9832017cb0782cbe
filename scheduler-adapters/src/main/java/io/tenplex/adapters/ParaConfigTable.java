package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.ParallelConfig;
import java.io.IOException;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * The prototype's para-config table: {@code {"<total GPUs>": {"mp_size": T, "pp_size": P,
 * "dp_size": D}}} with T·P·D equal to the total ({@code mp} is tensor parallelism). Validated when
 * parsed; errors name the entry.
 */
public final class ParaConfigTable implements Parallelizer {
    private final TreeMap<Integer, ParallelConfig> table;

    private ParaConfigTable(TreeMap<Integer, ParallelConfig> table) {
        this.table = table;
    }

    public static ParaConfigTable parse(String text) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(text);
        } catch (IOException e) {
            throw new IllegalArgumentException("para-config table is not valid JSON: "
                    + e.getMessage().lines().findFirst().orElse(""));
        }
        return of(root);
    }

    public static ParaConfigTable of(JsonNode root) {
        if (root == null || !root.isObject() || root.isEmpty()) {
            throw new IllegalArgumentException("para-config table must be a non-empty JSON object {\"<gpus>\": "
                    + "{\"mp_size\": T, \"pp_size\": P, \"dp_size\": D}}");
        }
        TreeMap<Integer, ParallelConfig> t = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            int gpus;
            try {
                gpus = Integer.parseInt(e.getKey().strip());
            } catch (NumberFormatException x) {
                throw new IllegalArgumentException("para-config key '" + e.getKey() + "' is not a number of GPUs");
            }
            JsonNode c = e.getValue();
            int tp = size(c, "mp_size", gpus);
            int pp = size(c, "pp_size", gpus);
            int dp = size(c, "dp_size", gpus);
            if ((long) tp * pp * dp != gpus) {
                throw new IllegalArgumentException("para-config entry " + gpus + ": mp_size*pp_size*dp_size = " + tp + "*"
                        + pp + "*" + dp + " = " + ((long) tp * pp * dp) + ", not " + gpus);
            }
            t.put(gpus, ParallelConfig.of(tp, pp, dp));
        }
        return new ParaConfigTable(t);
    }

    private static int size(JsonNode c, String field, int gpus) {
        JsonNode v = c.path(field);
        if (!v.canConvertToInt() || v.asInt() < 1) {
            throw new IllegalArgumentException("para-config entry " + gpus + ": \"" + field + "\" must be an integer >= 1");
        }
        return v.asInt();
    }

    @Override
    public ParallelConfig choose(Request r) {
        ParallelConfig c = table.get(r.devices());
        if (c == null) {
            throw new IllegalArgumentException("the para-config table has no entry for " + r.devices()
                    + " devices (it has " + table.keySet() + ")");
        }
        return c;
    }

    @Override
    public String name() {
        return "table";
    }
}
