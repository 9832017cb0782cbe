package io.tenplex.jobs.reconfigure;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.tenplex.jobs.common.CheckpointLayout;
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
                    + io.tenplex.jobs.common.Limits.abbreviate(e));
        }
        TensorMeta meta = null;
        if (!e.get(3).isNull()) {
            JsonNode shape = e.get(4);
            if (!e.get(3).isTextual() || !shape.isArray() || shape.size() > MAX_DIMS) {
                throw new IllegalArgumentException("a layout entry's dtype and shape are malformed: "
                        + io.tenplex.jobs.common.Limits.abbreviate(e));
            }
            long[] dims = new long[shape.size()];
            for (int i = 0; i < dims.length; i++) {
                if (!shape.get(i).canConvertToLong() || shape.get(i).longValue() < 0) {
                    throw new IllegalArgumentException("a layout entry's shape is malformed: "
                            + io.tenplex.jobs.common.Limits.abbreviate(e));
                }
                dims[i] = shape.get(i).longValue();
            }
            meta = new TensorMeta(DType.fromName(e.get(3).textValue()), Shape.of(dims));
        }
        return new CheckpointLayout.Item(e.get(0).textValue(), e.get(1).booleanValue(), e.get(2).intValue(), meta);
    }
}
