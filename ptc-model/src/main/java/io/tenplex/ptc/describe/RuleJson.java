package io.tenplex.ptc.describe;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Placement;
import java.util.Map;

/** One rule of a rules file to a {@link PartitionRules.Rule}; errors name the rule and the field. */
final class RuleJson {
    private RuleJson() {
    }

    static PartitionRules.Rule rule(JsonNode r, String where, Map<String, Long> params) {
        if (!r.isObject() || !r.path("match").isTextual() || !r.has("partition")) {
            throw new IllegalArgumentException(where + ": a rule needs \"match\" (a pattern) and \"partition\", got " + r);
        }
        Glob glob = new Glob(r.get("match").asText());
        String source = where;
        where = where + " '" + glob + "'";
        Partition p = partition(r.get("partition"), r, where, params);
        if (p instanceof Partition.Expert != glob.hasExpert()) {
            throw new IllegalArgumentException(where + ": an expert rule needs {e} in its pattern, and only an expert "
                    + "rule may have one");
        }
        Placement.Kind stage = null;
        if (r.has("stage")) {
            stage = switch (r.get("stage").asText()) {
                case "first" -> Placement.Kind.FIRST;
                case "last" -> Placement.Kind.LAST;
                default -> throw new IllegalArgumentException(where + ": stage '" + r.get("stage").asText()
                        + "' is not first or last");
            };
        }
        Long size = r.has("size") ? number(r, "size", where, params, 1, Long.MAX_VALUE) : null;
        String tied = r.has("tiedTo") ? r.get("tiedTo").asText() : null;
        return new PartitionRules.Rule(glob, p, stage, size, tied, source);
    }

    private static Partition partition(JsonNode p, JsonNode r, String where, Map<String, Long> params) {
        String kind = p.isTextual() ? p.asText() : p.path("kind").asText();
        JsonNode at = p.isTextual() ? r : p;
        long granule = at.has("granule") ? number(at, "granule", where, params, 1, 1L << 40) : 1;
        return switch (kind) {
            case "column" -> new Partition.Split(0, granule);
            case "row" -> new Partition.Split(1, granule);
            case "split" -> new Partition.Split((int) number(at, "dim", where, params, 0, MAX_DIMS - 1), granule);
            case "replicated" -> new Partition.Replicated();
            case "vocab" -> new Partition.VocabSplit(at.has("dim") ? (int) number(at, "dim", where, params, 0,
                    MAX_DIMS - 1) : 0, at.has("divisibleBy") ? (int) number(at, "divisibleBy", where, params, 1,
                    1 << 20) : 128);
            case "expert" -> new Partition.Expert(0, (int) number(at, "experts", where, params, 1, 1 << 20),
                    at.has("inner") ? partition(at.get("inner"), at, where, params) : new Partition.Replicated());
            default -> throw new IllegalArgumentException(where + ": partition '" + kind
                    + "' is not column, row, split, replicated, vocab or expert");
        };
    }

    /** A tensor has at most this many dimensions. */
    private static final int MAX_DIMS = 64;

    /** {@link #number(JsonNode, String, String, Map)} in [{@code min}, {@code max}]. */
    private static long number(JsonNode n, String field, String where, Map<String, Long> params, long min, long max) {
        long v = number(n, field, where, params);
        if (v < min || v > max) {
            throw new IllegalArgumentException(where + ": " + field + " " + v + " is not in [" + min + ", " + max + "]");
        }
        return v;
    }

    private static long number(JsonNode n, String field, String where, Map<String, Long> params) {
        JsonNode v = n.get(field);
        if (v == null) {
            throw new IllegalArgumentException(where + ": missing \"" + field + "\"");
        }
        if (v.isIntegralNumber()) {
            if (!v.canConvertToLong()) {
                throw new IllegalArgumentException(where + ": " + field + " " + v + " is too large");
            }
            return v.asLong();
        }
        String t = v.asText();
        if (t.startsWith("${") && t.endsWith("}")) {
            Long got = params.get(t.substring(2, t.length() - 1));
            if (got == null) {
                throw new IllegalArgumentException(where + ": " + field + " is " + t + ", but no such parameter was "
                        + "given (parameters: " + new java.util.TreeSet<>(params.keySet()) + ")");
            }
            return got;
        }
        throw new IllegalArgumentException(where + ": " + field + " must be a whole number or \"${name}\", got " + v);
    }
}
