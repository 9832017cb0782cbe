package io.tenplex.server;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The head and index of a compact batch upload ({@code application/x-tenplex-batch}, see
 * {@link BatchUpload}): a first line {@code tenplex-batch 1 <entries> <index bytes>}, then one line
 * per entry, {@code <bytes>\t<dtype>\t<dims>\t<name>}, where a file has {@code -} as dtype and dims, a
 * tensor its dtype's short name and its dimensions separated by commas (none for a scalar), and the
 * name is the entry's path below the upload's prefix (UTF-8, the last field: it may hold tabs, not
 * newlines). Every number is checked, overflow-safe, before anything is allocated.
 */
final class BatchIndex {
    static final String MAGIC = "tenplex-batch";
    /** Most bytes of the first line. */
    static final int MAX_HEAD = 96;
    /** Most entries in one batch (a client sends at most 2048). */
    static final int MAX_ENTRIES = 1 << 16;
    /** The shortest line of an entry: {@code 0\t-\t-\tx\n}. */
    private static final int MIN_LINE = 8;
    /** Most bytes of a tensor's dims field: as many as a tar upload's sidecar may hold. */
    static final int MAX_DIMS = 4096;
    /** Heap bytes a parsed path component or dimension may take (a String and its slots, or a long and its text). */
    private static final int PART_HEAP = 64;
    /** Heap bytes a parsed entry may take besides its parts (item, path, meta, shape, set and list slots, field texts). */
    private static final int ENTRY_HEAP = 256;

    /** The first line: how many entries the index holds and its length in bytes. */
    record Head(int entries, int indexBytes) {
    }

    /** One entry: where its bytes go, its tensor metadata (null for a file) and its size. */
    record Item(StorePath path, TensorMeta meta, long bytes) {
    }

    private BatchIndex() {
    }

    /**
     * Parses the first line (without its newline).
     *
     * @param maxIndex the most index bytes taken
     */
    static Head head(byte[] line, int length, int maxIndex) {
        String text = new String(line, 0, length, StandardCharsets.US_ASCII);
        String[] f = text.split(" ", -1);
        if (f.length != 4 || !f[0].equals(MAGIC)) {
            throw HttpError.badRequest("not a batch: the body must start with '" + MAGIC
                    + " 1 <entries> <index bytes>' and a newline");
        }
        if (!f[1].equals("1")) {
            throw HttpError.badRequest("batch version '" + printable(f[1]) + "' is not known (this daemon reads version 1)");
        }
        long entries = number(f[2], "the batch's entry count");
        long index = number(f[3], "the batch's index length");
        if (entries > MAX_ENTRIES) {
            throw HttpError.badRequest("a batch holds at most " + MAX_ENTRIES + " entries, this one says " + entries);
        }
        if (index > maxIndex) {
            throw new HttpError(io.netty.handler.codec.http.HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE,
                    "a batch's index is at most " + maxIndex + " bytes, this one says " + index);
        }
        if (index < entries * MIN_LINE) {
            throw HttpError.badRequest("a batch index of " + index + " bytes cannot hold " + entries + " entries");
        }
        return new Head((int) entries, (int) index);
    }

    /**
     * At most how many heap bytes parsing {@code index} takes, the index itself included, from one pass
     * over its bytes: parsed, every path component and dimension is an object of its own, so an index of
     * short parts (names {@code a/a/a/...}, dims {@code 1,1,1,...}) takes some 25 times its length.
     */
    static long heapCost(byte[] index, int entries) {
        long separators = 0;
        for (byte b : index) {
            if (b == '/' || b == ',') {
                separators++;
            }
        }
        // a name has at most one component more than its slashes, dims one dimension more than their commas
        return 2L * index.length + (separators + 2L * entries) * PART_HEAP + (long) entries * ENTRY_HEAP;
    }

    /**
     * Parses the index: its entries in order, their paths below {@code prefix}, each once. Sizes are
     * checked against the tensors' dtype and dims; their sum is not (the caller compares it with the
     * body).
     */
    static List<Item> items(byte[] index, Head head, StorePath prefix) {
        List<Item> out = new ArrayList<>(head.entries());
        Set<StorePath> seen = new HashSet<>();
        Map<String, TensorMeta> metas = new HashMap<>(); // by dtype and dims: a state repeats a few shapes
        int at = 0;
        for (int i = 0; i < head.entries(); i++) {
            int end = indexOf(index, (byte) '\n', at, head.indexBytes());
            if (end < 0) {
                throw HttpError.badRequest("batch index entry " + i + " of " + head.entries() + " has no ending newline");
            }
            Item item = item(index, at, end, i, prefix, metas);
            if (!seen.add(item.path())) {
                throw HttpError.badRequest("batch holds " + item.path() + " twice");
            }
            out.add(item);
            at = end + 1;
        }
        if (at != head.indexBytes()) {
            throw HttpError.badRequest("batch index has " + (head.indexBytes() - at) + " bytes after its "
                    + head.entries() + " entries");
        }
        return out;
    }

    private static Item item(byte[] index, int from, int end, int i, StorePath prefix, Map<String, TensorMeta> metas) {
        int[] tabs = new int[3];
        int at = from;
        for (int t = 0; t < 3; t++) {
            int tab = indexOf(index, (byte) '\t', at, end);
            if (tab < 0) {
                throw HttpError.badRequest("batch index entry " + i + " is not '<bytes>\\t<dtype>\\t<dims>\\t<name>'");
            }
            tabs[t] = tab;
            at = tab + 1;
        }
        String what = "batch index entry " + i;
        long bytes = number(index, from, tabs[0], what + "'s size");
        String type = ascii(index, tabs[0] + 1, tabs[2]); // dtype, a tab, dims
        String name = utf8(index, tabs[2] + 1, end, what);
        StorePath path = prefix.resolve(StorePath.parse(name));
        DaemonOwned.check(path);
        TensorMeta meta = metas.get(type);
        if (meta == null && !type.equals("-\t-")) {
            meta = meta(type.substring(0, tabs[1] - tabs[0] - 1), type.substring(tabs[1] - tabs[0]), path);
            metas.put(type, meta);
        }
        if (meta != null && meta.byteSize() != bytes) {
            throw HttpError.badRequest("batch entry " + path + ": tensor " + meta + " needs " + meta.byteSize()
                    + " bytes, the index gives " + bytes);
        }
        return new Item(path, meta, bytes);
    }

    /** A tensor's metadata; a file ({@code -} as dtype) must have {@code -} as dims. */
    private static TensorMeta meta(String dtype, String dims, StorePath path) {
        if (dtype.equals("-")) {
            throw HttpError.badRequest("batch entry " + path + ": a file ('-' as dtype) has '-' as dims");
        }
        if (dims.length() > MAX_DIMS) {
            throw HttpError.badRequest("batch entry " + path + ": its dims are longer than " + MAX_DIMS + " bytes");
        }
        try {
            return new TensorMeta(DType.fromName(dtype), Shape.parse(dims));
        } catch (IllegalArgumentException e) {
            throw HttpError.badRequest("batch entry " + path + ": " + e.getMessage());
        }
    }

    /** A decimal count of at most 18 digits (no sign, no spaces). */
    private static long number(String text, String what) {
        byte[] b = text.getBytes(StandardCharsets.ISO_8859_1);
        return number(b, 0, b.length, what);
    }

    /** The decimal count in bytes {@code [from, to)}: at most 18 digits, so below 10^18 (no overflow). */
    private static long number(byte[] b, int from, int to, String what) {
        long v = 0;
        for (int i = from; i < to; i++) {
            if (b[i] < '0' || b[i] > '9' || to - from > 18) {
                throw HttpError.badRequest(what + " '" + printable(ascii(b, from, Math.min(to, from + 60)))
                        + "' is not a count (decimal digits, below 10^18)");
            }
            v = v * 10 + (b[i] - '0');
        }
        if (from == to) {
            throw HttpError.badRequest(what + " is empty: not a count");
        }
        return v;
    }

    private static int indexOf(byte[] b, byte c, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] == c) {
                return i;
            }
        }
        return -1;
    }

    private static String ascii(byte[] b, int from, int to) {
        return new String(b, from, to - from, StandardCharsets.ISO_8859_1);
    }

    private static String utf8(byte[] b, int from, int to, String what) {
        boolean ascii = true;
        for (int i = from; i < to && ascii; i++) {
            ascii = b[i] >= 0;
        }
        if (ascii) {
            return ascii(b, from, to);
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b, from, to - from)).toString();
        } catch (CharacterCodingException e) {
            throw HttpError.badRequest(what + "'s name is not valid UTF-8");
        }
    }

    private static String printable(String s) {
        String cut = s.length() > 40 ? s.substring(0, 40) + "..." : s;
        return cut.replaceAll("[^\\x20-\\x7e]", "?");
    }
}
