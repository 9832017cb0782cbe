package io.tenplex.jobs.reconfigure;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.Limits;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The descriptions a change names by digest (the model, the old ranks' saved layouts), as a daemon
 * keeps them between changes: each travels once, is checked against its digest when it arrives, and
 * the least recently used are dropped when the budget is full (a coordinator sends a dropped one
 * again when the daemon says it lacks it).
 */
public final class Descriptions {
    /** The most one description may hold (bytes). */
    public static final int MAX_ONE = 32 << 20;
    /** The most all descriptions together hold by default (bytes of the daemon's heap). */
    public static final long DEFAULT_BUDGET = 64L << 20;
    /** The most entries a layout's description may list. */
    static final int MAX_ITEMS = 1 << 22;
    /** The most dimensions a layout entry may name. */
    static final int MAX_DIMS = 64;
    /** The longest address a description of the workers' addresses may give (characters). */
    static final int MAX_ADDRESS = 300;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final long budget;
    private final Map<String, byte[]> byDigest = new LinkedHashMap<>(16, 0.75f, true);
    private long held;

    public Descriptions() {
        this(DEFAULT_BUDGET);
    }

    public Descriptions(long budget) {
        this.budget = budget;
    }

    /** SHA-256 of the bytes, as 64 lowercase hex digits. */
    public static String digest(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /**
     * Keeps a description under its digest.
     *
     * @throws IllegalArgumentException when the bytes are not what the digest names, or too large
     */
    public synchronized void put(String digest, byte[] bytes) {
        if (bytes.length > MAX_ONE || bytes.length > budget) {
            throw new IllegalArgumentException("a description of " + bytes.length + " bytes is over the limit of "
                    + Math.min(MAX_ONE, budget));
        }
        if (!digest(bytes).equals(digest)) {
            throw new IllegalArgumentException("the description's bytes do not have the digest " + digest);
        }
        if (byDigest.containsKey(digest)) {
            byDigest.get(digest); // used: kept longer
            return;
        }
        var it = byDigest.entrySet().iterator();
        while (held + bytes.length > budget && it.hasNext()) {
            held -= it.next().getValue().length;
            it.remove();
        }
        byDigest.put(digest, bytes);
        held += bytes.length;
    }

    /** The description, or null when this daemon does not keep it. */
    public synchronized byte[] get(String digest) {
        return byDigest.get(digest);
    }

    /** The digests of {@code wanted} this daemon does not keep, in order. */
    public synchronized List<String> missing(List<String> wanted) {
        return wanted.stream().filter(d -> !byDigest.containsKey(d)).distinct().toList();
    }

    /** A model's description: its spec as JSON. */
    public static byte[] model(Model m) {
        return ModelSpecJson.write(m).getBytes(StandardCharsets.UTF_8);
    }

    /** The model a description gives. */
    public static Model model(byte[] description) {
        return ModelSpecJson.parse(new String(description, StandardCharsets.UTF_8));
    }

    /** A saved layout's description: its entries as {@code [path, tensor, dims, dtype, shape]} (the last two may be null). */
    public static byte[] layout(CheckpointLayout l) {
        ArrayNode out = JSON.createArrayNode();
        for (CheckpointLayout.Item it : l.items()) {
            ArrayNode e = out.addArray().add(it.path()).add(it.tensor()).add(it.dims());
            if (it.meta() == null) {
                e.addNull().addNull();
            } else {
                e.add(it.meta().dtype().wireName());
                ArrayNode shape = e.addArray();
                for (long d : it.meta().shape().dims()) {
                    shape.add(d);
                }
            }
        }
        try {
            return JSON.writeValueAsBytes(out);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The workers' addresses' description: a JSON object of worker (in increasing order) to host:port. */
    public static byte[] addresses(Map<Integer, String> daemons) {
        com.fasterxml.jackson.databind.node.ObjectNode out = JSON.createObjectNode();
        new java.util.TreeMap<>(daemons).forEach((w, a) -> out.put(Integer.toString(w), a));
        try {
            return JSON.writeValueAsBytes(out);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * The addresses a description gives.
     *
     * @throws IllegalArgumentException when it is not an object of at most {@link Limits#MAX_RANKS} workers
     *     (each a number in [0, {@link Limits#MAX_WORKER}) as written by {@link #addresses(Map)}) to
     *     addresses of 1 to {@value #MAX_ADDRESS} characters
     */
    public static Map<Integer, String> addresses(byte[] description) {
        if (description.length > (long) Limits.MAX_RANKS * (MAX_ADDRESS + 16)) {
            throw new IllegalArgumentException("the workers' addresses are " + description.length + " bytes, over the "
                    + (long) Limits.MAX_RANKS * (MAX_ADDRESS + 16) + " of " + Limits.MAX_RANKS + " addresses");
        }
        JsonNode all;
        try {
            all = JSON.readTree(description);
        } catch (IOException e) {
            throw new IllegalArgumentException("the workers' addresses are not JSON: " + e.getMessage());
        }
        if (all == null || !all.isObject() || all.size() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("the workers' addresses must be an object of at most " + Limits.MAX_RANKS
                    + " workers");
        }
        Map<Integer, String> out = new java.util.TreeMap<>();
        for (var it = all.fields(); it.hasNext();) {
            var e = it.next();
            int w = worker(e.getKey());
            JsonNode a = e.getValue();
            if (w < 0 || !a.isTextual() || a.textValue().isEmpty() || a.textValue().length() > MAX_ADDRESS) {
                throw new IllegalArgumentException("the workers' addresses name worker "
                        + Limits.abbreviate(com.fasterxml.jackson.databind.node.TextNode.valueOf(e.getKey())) + " at "
                        + Limits.abbreviate(a) + ": a worker in [0, " + Limits.MAX_WORKER + ") and an address of 1 to "
                        + MAX_ADDRESS + " characters are expected");
            }
            out.put(w, a.textValue());
        }
        if (!java.util.Arrays.equals(addresses(out), description)) { // one description per set of addresses
            throw new IllegalArgumentException("the workers' addresses are not written as a daemon writes them (workers "
                    + "in increasing order, once each, no spaces)");
        }
        return out;
    }

    /** A worker number as {@link #addresses(Map)} writes it, or -1. */
    private static int worker(String s) {
        if (s.isEmpty() || s.length() > 7 || !s.chars().allMatch(c -> c >= '0' && c <= '9')
                || (s.length() > 1 && s.charAt(0) == '0')) {
            return -1;
        }
        int w = Integer.parseInt(s);
        return w < Limits.MAX_WORKER ? w : -1;
    }

    /**
     * The layout a description gives.
     *
     * @throws IllegalArgumentException when it is not a list of such entries
     */
    public static CheckpointLayout layout(byte[] description) {
        JsonNode list;
        try {
            list = JSON.readTree(description);
        } catch (IOException e) {
            throw new IllegalArgumentException("a layout's description is not JSON: " + e.getMessage());
        }
        if (list == null || !list.isArray() || list.size() > MAX_ITEMS) {
            throw new IllegalArgumentException("a layout's description must be a list of at most " + MAX_ITEMS + " entries");
        }
        List<CheckpointLayout.Item> items = new ArrayList<>(list.size());
        for (JsonNode e : list) {
            items.add(item(e));
        }
        return CheckpointLayout.of(items);
    }

    private static CheckpointLayout.Item item(JsonNode e) {
        if (!e.isArray() || e.size() != 5 || !e.get(0).isTextual() || !e.get(1).isBoolean() || !e.get(2).canConvertToInt()
                || e.get(2).intValue() < 0 || e.get(2).intValue() > MAX_DIMS) {
            throw new IllegalArgumentException("a layout entry must be [path, tensor, dims, dtype, shape]: "
                    + Limits.abbreviate(e));
        }
        TensorMeta meta = null;
        if (!e.get(3).isNull()) {
            JsonNode shape = e.get(4);
            if (!e.get(3).isTextual() || !shape.isArray() || shape.size() > MAX_DIMS) {
                throw new IllegalArgumentException("a layout entry's dtype and shape are malformed: "
                        + Limits.abbreviate(e));
            }
            long[] dims = new long[shape.size()];
            for (int i = 0; i < dims.length; i++) {
                if (!shape.get(i).canConvertToLong() || shape.get(i).longValue() < 0) {
                    throw new IllegalArgumentException("a layout entry's shape is malformed: "
                            + Limits.abbreviate(e));
                }
                dims[i] = shape.get(i).longValue();
            }
            meta = new TensorMeta(DType.fromName(e.get(3).textValue()), Shape.of(dims));
        }
        return new CheckpointLayout.Item(e.get(0).textValue(), e.get(1).booleanValue(), e.get(2).intValue(), meta);
    }
}
