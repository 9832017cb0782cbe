package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/**
 * An object checked against a published CRD's structural schema ({@code openAPIV3Schema} of one of
 * its versions), as the API server's schema validation with strict field validation checks it: types
 * (with {@code x-kubernetes-int-or-string}), required fields, no field the schema does not name
 * (unless {@code x-kubernetes-preserve-unknown-fields}, or a map's {@code additionalProperties}),
 * enums, bounds, lengths and patterns. An object schema that names no fields ({@code metadata}) is
 * not looked into, as the API server validates metadata on its own. CEL rules
 * ({@code x-kubernetes-validations}) and list-map key uniqueness are not checked.
 */
final class CrdSchema {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private final String kind;
    private final String apiVersion;
    private final JsonNode schema;

    private CrdSchema(String kind, String apiVersion, JsonNode schema) {
        this.kind = kind;
        this.apiVersion = apiVersion;
        this.schema = schema;
    }

    /** The schema of {@code version} in the gzipped CRD test resource {@code resource}. */
    static CrdSchema load(String resource, String version) throws IOException {
        JsonNode crd;
        try (InputStream in = CrdSchema.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException("no test resource " + resource);
            }
            crd = YAML.readTree(new GZIPInputStream(in));
        }
        String group = crd.path("spec").path("group").asText();
        for (JsonNode v : crd.path("spec").path("versions")) {
            if (v.path("name").asText().equals(version)) {
                return new CrdSchema(crd.path("spec").path("names").path("kind").asText(), group + "/" + version,
                        v.path("schema").path("openAPIV3Schema"));
            }
        }
        throw new IOException(resource + " has no version " + version);
    }

    String kind() {
        return kind;
    }

    String apiVersion() {
        return apiVersion;
    }

    /** What is wrong with {@code object} (a path and a reason each); empty when it validates. */
    List<String> errors(JsonNode object) {
        List<String> out = new ArrayList<>();
        if (!kind.equals(object.path("kind").asText()) || !apiVersion.equals(object.path("apiVersion").asText())) {
            out.add("not a " + apiVersion + " " + kind + ": " + object.path("apiVersion").asText() + " "
                    + object.path("kind").asText());
        }
        check(object, schema, "", out);
        return out;
    }

    private static void check(JsonNode v, JsonNode s, String at, List<String> out) {
        String where = at.isEmpty() ? "." : at;
        if (v.isNull()) {
            if (!s.path("nullable").asBoolean(false)) {
                out.add(where + ": null is not allowed");
            }
            return;
        }
        if (s.path("x-kubernetes-int-or-string").asBoolean(false)) {
            if (!v.isIntegralNumber() && !v.isTextual()) {
                out.add(where + ": must be an integer or a string, not " + v.getNodeType());
            }
            return;
        }
        String type = s.path("type").asText("");
        switch (type) {
            case "object" -> object(v, s, at, out);
            case "array" -> array(v, s, at, out);
            case "string" -> string(v, s, where, out);
            case "integer", "number" -> number(v, s, type, where, out);
            case "boolean" -> {
                if (!v.isBoolean()) {
                    out.add(where + ": must be a boolean, not " + v.getNodeType());
                }
            }
            default -> {
                // no type: anything (x-kubernetes-preserve-unknown-fields)
            }
        }
        if (s.has("enum") && !contains(s.get("enum"), v)) {
            out.add(where + ": " + v + " is not one of " + s.get("enum"));
        }
    }

    private static void object(JsonNode v, JsonNode s, String at, List<String> out) {
        if (!v.isObject()) {
            out.add((at.isEmpty() ? "." : at) + ": must be an object, not " + v.getNodeType());
            return;
        }
        for (JsonNode r : s.path("required")) {
            if (!v.has(r.asText())) {
                out.add(at + "." + r.asText() + ": required");
            }
        }
        JsonNode props = s.path("properties");
        JsonNode extra = s.path("additionalProperties");
        boolean free = s.path("x-kubernetes-preserve-unknown-fields").asBoolean(false)
                || (!props.isObject() && !extra.isObject());
        for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            String child = at + "." + f.getKey();
            if (props.has(f.getKey())) {
                check(f.getValue(), props.get(f.getKey()), child, out);
            } else if (extra.isObject()) {
                check(f.getValue(), extra, child, out);
            } else if (!free) {
                out.add(child + ": unknown field (the schema names " + fieldNames(props) + ")");
            }
        }
    }

    private static void array(JsonNode v, JsonNode s, String at, List<String> out) {
        if (!v.isArray()) {
            out.add((at.isEmpty() ? "." : at) + ": must be an array, not " + v.getNodeType());
            return;
        }
        if (s.has("minItems") && v.size() < s.get("minItems").asInt()) {
            out.add(at + ": at least " + s.get("minItems").asInt() + " items, not " + v.size());
        }
        if (s.has("maxItems") && v.size() > s.get("maxItems").asInt()) {
            out.add(at + ": at most " + s.get("maxItems").asInt() + " items, not " + v.size());
        }
        for (int i = 0; i < v.size(); i++) {
            check(v.get(i), s.path("items"), at + "[" + i + "]", out);
        }
    }

    private static void string(JsonNode v, JsonNode s, String where, List<String> out) {
        if (!v.isTextual()) {
            out.add(where + ": must be a string, not " + v.getNodeType());
            return;
        }
        int n = v.asText().codePointCount(0, v.asText().length());
        if (s.has("minLength") && n < s.get("minLength").asInt()) {
            out.add(where + ": at least " + s.get("minLength").asInt() + " characters");
        }
        if (s.has("maxLength") && n > s.get("maxLength").asInt()) {
            out.add(where + ": at most " + s.get("maxLength").asInt() + " characters");
        }
        if (s.has("pattern") && !Pattern.compile(s.get("pattern").asText()).matcher(v.asText()).find()) {
            out.add(where + ": does not match " + s.get("pattern").asText());
        }
    }

    private static void number(JsonNode v, JsonNode s, String type, String where, List<String> out) {
        if (type.equals("integer") ? !v.isIntegralNumber() : !v.isNumber()) {
            out.add(where + ": must be " + (type.equals("integer") ? "an integer" : "a number") + ", not "
                    + v.getNodeType() + " " + v);
            return;
        }
        BigDecimal n = v.decimalValue();
        if (s.has("minimum") && n.compareTo(s.get("minimum").decimalValue()) < 0) {
            out.add(where + ": " + v + " is below the minimum " + s.get("minimum"));
        }
        if (s.has("maximum") && n.compareTo(s.get("maximum").decimalValue()) > 0) {
            out.add(where + ": " + v + " is above the maximum " + s.get("maximum"));
        }
        if ("int32".equals(s.path("format").asText()) && (n.compareTo(BigDecimal.valueOf(Integer.MIN_VALUE)) < 0
                || n.compareTo(BigDecimal.valueOf(Integer.MAX_VALUE)) > 0)) {
            out.add(where + ": " + v + " does not fit int32");
        }
    }

    private static boolean contains(JsonNode values, JsonNode v) {
        for (JsonNode e : values) {
            if (e.equals(v)) {
                return true;
            }
        }
        return false;
    }

    private static List<String> fieldNames(JsonNode props) {
        List<String> names = new ArrayList<>();
        props.fieldNames().forEachRemaining(names::add);
        return names.size() > 8 ? List.of(String.join(", ", names.subList(0, 8)) + ", ...") : names;
    }
}
