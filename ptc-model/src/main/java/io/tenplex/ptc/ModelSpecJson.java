package io.tenplex.ptc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The model spec JSON (the first way to describe a model, see docs/PTC.md): every tensor with its
 * global shape, dtype, pipeline placement and partition kind, the non-tensor values, and tied copies.
 * Errors name the tensor and the field.
 */
public final class ModelSpecJson {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ModelSpecJson() {
    }

    private static long[] dims(JsonNode shape, String where) {
        if (!shape.isArray()) {
            throw new IllegalArgumentException(where + ": shape must be a list of integers");
        }
        long[] dims = new long[shape.size()];
        for (int i = 0; i < dims.length; i++) {
            JsonNode d = shape.get(i);
            boolean whole = d.isIntegralNumber() && d.canConvertToLong()
                    || d.isNumber() && d.doubleValue() == Math.rint(d.doubleValue()) && Math.abs(d.doubleValue()) < 0x1p62
                    || d.isTextual() && d.textValue().matches("-?[0-9]{1,18}");
            if (!whole) { // whole numbers as specs have written them (4096, 4096.0, "4096"), nothing else
                throw new IllegalArgumentException(where + ": shape must be a list of integers");
            }
            dims[i] = d.asLong();
        }
        return dims;
    }

    public static Model parse(String json) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("model spec is not valid JSON: " + e.getMessage().lines().findFirst().orElse(""));
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("model spec must be a JSON object");
        }
        int layers = required(root, "layers", "model spec").asInt();
        List<TensorSpec> tensors = new ArrayList<>();
        for (JsonNode t : required(root, "tensors", "model spec")) {
            String name = required(t, "name", "tensor").asText();
            String where = "tensor " + name;
            long[] dims = dims(required(t, "shape", where), where);
            Placement at;
            if (t.has("layer")) {
                at = Placement.layer(t.get("layer").asInt());
            } else {
                String stage = required(t, "stage", where + " (give \"layer\" or \"stage\")").asText();
                at = switch (stage) {
                    case "first" -> Placement.first();
                    case "last" -> Placement.last();
                    default -> throw new IllegalArgumentException(where + ": stage '" + stage + "' is not first or last");
                };
            }
            tensors.add(new TensorSpec(name, DType.fromName(required(t, "dtype", where).asText()), Shape.of(dims), at,
                    partition(required(t, "partition", where), where)));
        }
        List<ValueSpec> values = new ArrayList<>();
        for (JsonNode v : root.path("values")) {
            values.add(new ValueSpec(required(v, "key", "value").asText(), scope(v.path("scope").asText("global"))));
        }
        Map<String, String> ties = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.path("ties").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            ties.put(e.getKey(), e.getValue().asText());
        }
        return new Model(tensors, values, layers, ties);
    }

    private static ValueSpec.Scope scope(String scope) {
        return switch (scope) {
            case "global" -> ValueSpec.Scope.GLOBAL;
            case "per-position" -> ValueSpec.Scope.PER_POSITION;
            case "per-data-rank" -> ValueSpec.Scope.PER_DATA_RANK;
            default -> throw new IllegalArgumentException("value scope '" + scope + "' is not global, per-position or "
                    + "per-data-rank");
        };
    }

    private static Partition partition(JsonNode p, String where) {
        String kind = required(p, "kind", where + " partition").asText();
        return switch (kind) {
            case "split" -> new Partition.Split(required(p, "dim", where + " split").asInt(), p.path("granule").asLong(1));
            case "vocab" -> new Partition.VocabSplit(p.path("dim").asInt(0), p.path("divisibleBy").asInt(128));
            case "replicated" -> new Partition.Replicated();
            case "expert" -> new Partition.Expert(required(p, "expert", where).asInt(), required(p, "experts", where).asInt(),
                    p.has("inner") ? partition(p.get("inner"), where) : new Partition.Replicated());
            default -> throw new IllegalArgumentException(where + ": partition kind '" + kind
                    + "' is not split, vocab, replicated or expert");
        };
    }

    private static JsonNode required(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException(where + ": missing \"" + field + "\"");
        }
        return v;
    }

    /** The model as spec JSON (pretty-printed); {@code parse(write(m))} describes the same model. */
    public static String write(Model m) {
        ObjectNode root = JSON.createObjectNode();
        root.put("layers", m.layers());
        ArrayNode ts = root.putArray("tensors");
        for (TensorSpec t : m.tensors()) {
            ObjectNode o = ts.addObject();
            o.put("name", t.name());
            o.put("dtype", t.dtype().wireName());
            ArrayNode shape = o.putArray("shape");
            for (long d : t.shape().dims()) {
                shape.add(d);
            }
            if (t.placement().kind() == Placement.Kind.LAYER) {
                o.put("layer", t.placement().layer());
            } else {
                o.put("stage", t.placement().kind().name().toLowerCase(Locale.ROOT));
            }
            o.set("partition", partitionJson(t.partition()));
        }
        ArrayNode vs = root.putArray("values");
        for (ValueSpec v : m.values()) {
            vs.addObject().put("key", v.key()).put("scope", switch (v.scope()) {
                case GLOBAL -> "global";
                case PER_POSITION -> "per-position";
                case PER_DATA_RANK -> "per-data-rank";
            });
        }
        ObjectNode ties = root.putObject("ties");
        for (TensorSpec t : m.tensors()) {
            if (m.tiedTo(t.name()) != null) {
                ties.put(t.name(), m.tiedTo(t.name()));
            }
        }
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(root);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ObjectNode partitionJson(Partition p) {
        ObjectNode o = JSON.createObjectNode();
        if (p instanceof Partition.Split s) {
            o.put("kind", "split").put("dim", s.dim());
            if (s.granule() != 1) {
                o.put("granule", s.granule());
            }
        } else if (p instanceof Partition.VocabSplit v) {
            o.put("kind", "vocab").put("dim", v.dim()).put("divisibleBy", v.divisibleBy());
        } else if (p instanceof Partition.Expert e) {
            o.put("kind", "expert").put("expert", e.expert()).put("experts", e.experts());
            o.set("inner", partitionJson(e.inner()));
        } else {
            o.put("kind", "replicated");
        }
        return o;
    }
}
