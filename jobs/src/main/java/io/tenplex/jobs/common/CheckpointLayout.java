package io.tenplex.jobs.common;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How one rank's saved tree names the planner's keys. Two layouts are understood:
 * <ul>
 *   <li>flat: each tensor or value stored under its key as one name (what {@code tenplex demo} and
 *       JVM clients write);</li>
 *   <li>the prototype's nested layout of a state dict (see the wire protocol): dict keys are
 *       directories, lists are directories with {@code dir.meta}, tensors end in
 *       {@code .numpy.ndarray} and plain values in {@code .int}, {@code .str}, .... The key is the
 *       dotted path without the type suffix and without Megatron's leading {@code model.}; Megatron's
 *       optimizer state, stored by parameter position ({@code optimizer/optimizer/state/<pos>/exp_avg},
 *       {@code optimizer/fp32_from_fp16_params/<group>/<i>}), is keyed
 *       {@code optimizer.exp_avg.<param>} and {@code optimizer.fp32_param.<param>} as in
 *       {@link io.tenplex.ptc.MegatronStructures}. With fp32 weights Megatron saves the torch
 *       optimizer's state dict itself ({@code optimizer/state/<pos>/exp_avg},
 *       {@code optimizer/param_groups}, no master copies); that form is kept for the new ranks.</li>
 * </ul>
 * Pure: built from a listing, so the coordinator can map every rank's keys before sending plans.
 */
public final class CheckpointLayout {
    public static final String TENSOR_SUFFIX = ".numpy.ndarray";
    private static final List<String> VALUE_SUFFIXES = List.of(".argparse.Namespace", ".none", ".str", ".int",
            ".float", ".bool");
    private static final Pattern STATE = Pattern.compile("optimizer/(optimizer/)?state/(\\d+)/(\\w+)" + Pattern.quote(
            TENSOR_SUFFIX));
    private static final Pattern FP32 = Pattern.compile("optimizer/fp32_from_fp16_params/(\\d+)/(\\d+)" + Pattern.quote(
            TENSOR_SUFFIX));
    static final String PARAMS_GROUPS = "optimizer/optimizer/param_groups/";
    /**
     * Megatron's models live below this directory; only then is optimizer state stored by parameter
     * position read as Megatron's (another tree's {@code optimizer/state/<n>/...}, a torch optimizer's
     * own state dict, keeps its paths as keys).
     */
    static final String MEGATRON_MODEL = "model/language_model/";
    static final String FP32_PARAMS_GROUPS = "optimizer/param_groups/";

    /**
     * One stored entry below the rank directory: its relative path, whether it is a tensor, its rank
     * (dims), and a tensor's dtype and shape when the listing gave them (else null).
     */
    public record Item(String path, boolean tensor, int dims, io.tenplex.ptc.TensorMeta meta) {
        public Item(String path, boolean tensor, int dims) {
            this(path, tensor, dims, null);
        }
    }

    private final Map<String, String> tensors = new LinkedHashMap<>();
    private final List<Item> items;
    private final boolean megatronOptimizer;
    private final boolean fp32Optimizer;

    private CheckpointLayout(List<Item> items) {
        this.items = List.copyOf(items);
        List<String> params = new ArrayList<>();
        Map<String, Integer> dims = new LinkedHashMap<>();
        List<Item> positional = new ArrayList<>();
        boolean megatronModel = items.stream().anyMatch(it -> it.tensor() && it.path().startsWith(MEGATRON_MODEL));
        for (Item it : items) {
            if (!it.tensor()) {
                continue;
            }
            if (megatronModel && (STATE.matcher(it.path()).matches() || FP32.matcher(it.path()).matches())) {
                positional.add(it);
                continue;
            }
            String key = key(it.path());
            putKey(key, it.path());
            if (it.path().startsWith("model/")) {
                params.add(key); // Megatron's parameters, in model order
                dims.put(key, it.dims());
            }
        }
        this.megatronOptimizer = !positional.isEmpty();
        this.fp32Optimizer = megatronOptimizer && positional.stream().noneMatch(it -> it.path().startsWith("optimizer/"
                + "optimizer/") || it.path().startsWith("optimizer/fp32_from_fp16_params/"));
        List<List<String>> groups = groups(params, dims);
        List<String> byPosition = new ArrayList<>(groups.get(0));
        byPosition.addAll(groups.get(1));
        for (Item it : positional) {
            Matcher s = STATE.matcher(it.path());
            String key;
            if (s.matches()) {
                key = "optimizer." + s.group(3) + "." + param(byPosition, Integer.parseInt(s.group(2)), it);
            } else {
                Matcher f = FP32.matcher(it.path());
                f.matches();
                int g = Integer.parseInt(f.group(1));
                if (g > 1) {
                    throw new IllegalArgumentException(it.path() + ": Megatron has two parameter groups, not " + (g + 1));
                }
                key = "optimizer.fp32_param." + param(groups.get(g), Integer.parseInt(f.group(2)), it);
            }
            putKey(key, it.path());
        }
    }

    /** Maps a key to its stored path; two paths of one key are refused rather than one dropped. */
    private void putKey(String key, String path) {
        String other = tensors.put(key, path);
        if (other != null) {
            throw new IllegalArgumentException("saved tensors " + other + " and " + path + " are both key '" + key
                    + "'; save one of them under another name");
        }
    }

    /** The listed entries it was read from, in listing order. */
    public List<Item> items() {
        return items;
    }

    public static CheckpointLayout of(List<Item> items) {
        return new CheckpointLayout(items);
    }

    private static String param(List<String> order, int pos, Item it) {
        if (pos >= order.size()) {
            throw new IllegalArgumentException(it.path() + ": position " + pos + " but the rank has " + order.size()
                    + " parameters");
        }
        return order.get(pos);
    }

    /**
     * Megatron's two parameter groups: matrices (with weight decay), then vectors, each in the
     * model's parameter order (the tied head right after the language model, see
     * {@link io.tenplex.ptc.MegatronStructures#parameterOrder}).
     */
    public static List<List<String>> groups(List<String> params, Map<String, Integer> dims) {
        List<String> decay = new ArrayList<>();
        List<String> noDecay = new ArrayList<>();
        for (String p : io.tenplex.ptc.MegatronStructures.parameterOrder(params)) {
            (dims.get(p) >= 2 ? decay : noDecay).add(p);
        }
        return List.of(decay, noDecay);
    }

    /** The key of a stored path: dotted, type suffix and a leading {@code model.} removed. */
    public static String key(String path) {
        String p = path;
        if (p.endsWith(TENSOR_SUFFIX)) {
            p = p.substring(0, p.length() - TENSOR_SUFFIX.length());
        } else {
            for (String s : VALUE_SUFFIXES) {
                if (p.endsWith(s)) {
                    p = p.substring(0, p.length() - s.length());
                    break;
                }
            }
        }
        p = p.replace('/', '.');
        if (p.startsWith("model.")) {
            p = p.substring("model.".length());
        }
        if (p.startsWith("optimizer.optimizer.")) {
            p = "optimizer." + p.substring("optimizer.optimizer.".length());
        }
        return p;
    }

    /**
     * What this rank saved, as a model is inferred from it: each tensor key's dtype and shape (in the
     * listing's order), and the value keys: each non-tensor file grouped up to the highest directory
     * that holds no tensor ({@code optimizer/param_groups/...} is the one value {@code optimizer.param_groups}).
     *
     * @throws IllegalArgumentException when the listing did not give a tensor's dtype and shape
     */
    public io.tenplex.ptc.describe.ShardInference.Saved saved(int rank) {
        Map<String, io.tenplex.ptc.TensorMeta> byPath = new java.util.HashMap<>();
        java.util.Set<String> tensorDirs = new java.util.HashSet<>();
        for (Item it : items) {
            if (it.tensor()) {
                byPath.put(it.path(), it.meta());
                for (String d = parent(it.path()); !d.isEmpty(); d = parent(d)) {
                    tensorDirs.add(d);
                }
            }
        }
        Map<String, io.tenplex.ptc.TensorMeta> metas = new LinkedHashMap<>();
        tensors.forEach((key, path) -> {
            io.tenplex.ptc.TensorMeta m = byPath.get(path);
            if (m == null) {
                throw new IllegalArgumentException("rank " + rank + ": the listing of " + path + " gives no dtype and shape");
            }
            metas.put(key, m);
        });
        java.util.Set<String> values = new java.util.TreeSet<>();
        for (Item it : items) {
            if (!it.tensor() && !(megatronOptimizer && isParamsList(it.path()))) {
                String top = it.path();
                while (!parent(top).isEmpty() && !tensorDirs.contains(parent(top))) {
                    top = parent(top);
                }
                values.add(key(top));
            }
        }
        return new io.tenplex.ptc.describe.ShardInference.Saved(metas, values);
    }

    private static String parent(String path) {
        int slash = path.lastIndexOf('/');
        return slash < 0 ? "" : path.substring(0, slash);
    }

    /** True for the prototype's Megatron layout, where optimizer state is stored by parameter position. */
    public boolean megatronOptimizer() {
        return megatronOptimizer;
    }

    /** True for Megatron's fp32 layout: the torch optimizer's state dict at {@code optimizer/}, no master copies. */
    public boolean fp32Optimizer() {
        return fp32Optimizer;
    }

    /** The stored path of a tensor key, or null when the rank saved no such tensor. */
    public String storedTensor(String key) {
        return tensors.get(key);
    }

    /** The stored path of a tensor key. */
    public String tensorPath(String key, int rank) {
        String p = tensors.get(key);
        if (p == null) {
            throw new IllegalArgumentException("rank " + rank + " saved no tensor '" + key + "' (" + tensors.size()
                    + " tensors saved" + (tensors.isEmpty() ? "" : ", e.g. " + tensors.keySet().iterator().next()) + ")");
        }
        return p;
    }

    /**
     * The stored paths of a value (a file, or a whole subtree such as a list or dict), leaving out
     * Megatron's parameter position lists, which the destination rebuilds for its own parameters.
     */
    public List<String> valuePaths(String key, int rank) {
        List<String> out = new ArrayList<>();
        for (Item it : items) {
            String k = key(it.path());
            boolean positional = megatronOptimizer && (STATE.matcher(it.path()).matches() || FP32.matcher(it.path())
                    .matches());
            if ((k.equals(key) || k.startsWith(key + ".")) && !positional
                    && !(megatronOptimizer && isParamsList(it.path()))) {
                out.add(it.path());
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("rank " + rank + " saved no value '" + key + "'");
        }
        return out;
    }

    /**
     * The stored paths that neither a placed tensor nor a declared value covers: tensors whose key is
     * not in {@code placed} and files outside every value of {@code declared} (a training loop's
     * scheduler, step, epoch, RNG state, and the type records of its directories when the model spec
     * lists only the model and optimizer). Empty for Megatron's layout, whose values are all declared.
     */
    public List<String> undeclaredPaths(java.util.Set<String> placed, java.util.Set<String> declared) {
        List<String> out = new ArrayList<>();
        if (megatronOptimizer) {
            return out;
        }
        for (Item it : items) {
            String k = key(it.path());
            if (it.tensor() ? placed.contains(k) : declared.stream().anyMatch(d -> k.equals(d) || k.startsWith(d + "."))) {
                continue;
            }
            out.add(it.path());
        }
        return out;
    }

    private static boolean isParamsList(String path) {
        String groups = path.startsWith(PARAMS_GROUPS) ? PARAMS_GROUPS : path.startsWith(FP32_PARAMS_GROUPS)
                ? FP32_PARAMS_GROUPS : null;
        if (groups == null) {
            return false;
        }
        String[] p = path.substring(groups.length()).split("/");
        return p.length >= 2 && p[1].equals("params");
    }

    /**
     * The path under which a destination rank stores {@code destKey}, following the source's naming
     * of {@code sourceKey} (stored at {@code sourcePath}): the same directories and suffix, the
     * names' tokens replaced (a pipeline change renumbers {@code layers.<n>}). When the two keys do
     * not line up (the tied head made from the embedding), dict nesting is used for the new key.
     */
    public static String destPath(String sourcePath, String sourceKey, String destKey) {
        if (sourcePath.equals(sourceKey)) {
            return destKey; // flat
        }
        String suffix = "";
        String body = sourcePath;
        if (body.endsWith(TENSOR_SUFFIX)) {
            suffix = TENSOR_SUFFIX;
            body = body.substring(0, body.length() - suffix.length());
        }
        boolean model = body.startsWith("model/");
        String logical = (model ? "model." : "") + destKey;
        String[] want = logical.split("\\.");
        List<String> seps = new ArrayList<>();
        List<String> tokens = new ArrayList<>();
        StringBuilder t = new StringBuilder();
        for (char c : body.toCharArray()) {
            if (c == '/' || c == '.') {
                tokens.add(t.toString());
                seps.add(String.valueOf(c));
                t.setLength(0);
            } else {
                t.append(c);
            }
        }
        tokens.add(t.toString());
        if (tokens.size() != want.length) {
            return logical.replace('.', '/') + suffix;
        }
        StringBuilder out = new StringBuilder(want[0]);
        for (int i = 1; i < want.length; i++) {
            out.append(seps.get(i - 1)).append(want[i]);
        }
        return out + suffix;
    }

    /** Where Megatron's mixed-precision optimizer stores a parameter's state, given the destination's parameter groups. */
    public static String megatronOptimizerPath(String destKey, List<List<String>> groups) {
        return megatronOptimizerPath(destKey, groups, false);
    }

    /**
     * Where Megatron's optimizer stores a parameter's state, given the destination's parameter groups:
     * under {@code optimizer/optimizer/state} (fp16, bf16) or {@code optimizer/state} ({@code fp32}).
     */
    public static String megatronOptimizerPath(String destKey, List<List<String>> groups, boolean fp32) {
        String rest = destKey.substring("optimizer.".length());
        int dot = rest.indexOf('.');
        String kind = rest.substring(0, dot);
        String param = rest.substring(dot + 1);
        int g = groups.get(0).contains(param) ? 0 : 1;
        int j = groups.get(g).indexOf(param);
        if (j < 0) {
            throw new IllegalArgumentException("optimizer state " + destKey + " has no parameter " + param + " on its rank");
        }
        if (kind.equals("fp32_param")) {
            if (fp32) {
                throw new IllegalArgumentException(destKey + ": fp32 training keeps no master copies");
            }
            return "optimizer/fp32_from_fp16_params/" + g + "/" + j + TENSOR_SUFFIX;
        }
        int pos = g == 0 ? j : groups.get(0).size() + j;
        return (fp32 ? "optimizer/state/" : "optimizer/optimizer/state/") + pos + "/" + kind + TENSOR_SUFFIX;
    }

    /**
     * The list markers and position lists a destination rank needs in Megatron's layout: the
     * {@code dir.meta} of {@code fp32_from_fp16_params} and its groups, and each parameter group's
     * {@code params} positions (with {@code .int} leaves), for its own parameter groups.
     */
    public static Map<String, String> megatronGenerated(List<List<String>> groups) {
        return megatronGenerated(groups, false);
    }

    /** As {@link #megatronGenerated(List)}; {@code fp32}: Megatron's fp32 layout (no master copies). */
    public static Map<String, String> megatronGenerated(List<List<String>> groups, boolean fp32) {
        Map<String, String> out = new LinkedHashMap<>();
        if (!fp32) {
            out.put("optimizer/fp32_from_fp16_params/dir.meta", "list\n2");
        }
        String paramGroups = fp32 ? FP32_PARAMS_GROUPS : PARAMS_GROUPS;
        int pos = 0;
        for (int g = 0; g < 2; g++) {
            if (!fp32) {
                out.put("optimizer/fp32_from_fp16_params/" + g + "/dir.meta", "list\n" + groups.get(g).size());
            }
            out.put(paramGroups + g + "/params/dir.meta", "list\n" + groups.get(g).size());
            for (int i = 0; i < groups.get(g).size(); i++) {
                out.put(paramGroups + g + "/params/" + i + ".int", Integer.toString(pos++));
            }
        }
        return out;
    }
}
