package io.tenplex.jobs.reconfigure;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.ptc.describe.PartitionRules;
import io.tenplex.ptc.describe.ShardInference;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A job's model inferred from what its ranks saved, when no model spec is stored with it but partition
 * rules are ({@code /job/<job>/rules.json}, written by {@code tenplex.save(..., rules=)} or a PUT): the
 * shards of the newest complete generation, listed on the daemons of its data-parallel index 0, with
 * the configuration they were saved under, go through {@link ShardInference} (docs/PTC.md). Anything
 * that does not fit is refused with the tensor, the ranks and the configuration.
 */
public final class InferredModels {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Rules are a short list of patterns; a larger file is refused before it is parsed. */
    static final int MAX_RULES_CHARS = 1 << 20;

    private final TensorStore store;
    private final Generations generations;
    private final DaemonClient client;

    public InferredModels(TensorStore store, Generations generations, DaemonClient client) {
        this.store = store;
        this.generations = generations;
        this.client = client;
    }

    /** The rules stored with the job, if any (their {@code params} fill {@code "${name}"} numbers). */
    public Optional<PartitionRules> rules(String job) {
        return SmallFiles.read(store, new JobLayout(job).rules()).map(InferredModels::parseRules);
    }

    /**
     * Rules as stored: {@code {"rules": [...], "params": {"name": number, ...}}} (params optional); a
     * string among the rules names a shipped set ({@code "megatron"}, {@code "transformer"}), read in its place.
     */
    public static PartitionRules parseRules(String text) {
        if (text.length() > MAX_RULES_CHARS) {
            throw new IllegalArgumentException("the stored rules are " + text.length() + " characters; at most "
                    + MAX_RULES_CHARS + " are read");
        }
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (IOException e) {
            throw new IllegalArgumentException("rules are not valid JSON: " + e.getMessage().lines().findFirst().orElse(""));
        }
        Map<String, Long> params = new TreeMap<>();
        root.path("params").fields().forEachRemaining(e -> {
            if (!e.getValue().isIntegralNumber() || !e.getValue().canConvertToLong()) {
                throw new IllegalArgumentException("rules: parameter '" + e.getKey() + "' must be a whole number, got "
                        + e.getValue());
            }
            params.put(e.getKey(), e.getValue().asLong());
        });
        JsonNode items = root.isObject() ? root.path("rules") : root;
        if (!items.isArray()) {
            return PartitionRules.parse(text, params); // refused there, with the expected form
        }
        List<PartitionRules> parts = new ArrayList<>();
        ArrayNode run = JSON.createArrayNode();
        for (JsonNode r : items) {
            if (r.isTextual()) {
                parts.add(PartitionRules.parse(run.toString(), params));
                parts.add(PartitionRules.shipped(r.asText(), params));
                run = JSON.createArrayNode();
            } else {
                run.add(r);
            }
        }
        parts.add(PartitionRules.parse(run.toString(), params));
        return parts.stream().reduce(PartitionRules::then).orElseThrow();
    }

    /** Whether the configuration {@code c} (a request's {@code to}) has T = P = 1. */
    public static boolean dataParallelOnly(JsonNode c) {
        return c != null && c.path("tp").asInt(1) == 1 && c.path("pp").asInt(1) == 1;
    }

    /**
     * The model of a job that described nothing, for a change of its data-parallel size: every rank's
     * tree is whole under T = P = 1, so each tensor rank 0 saved is replicated under its own key
     * (in its layer when its name has {@code layers.<n>.}) and every value is carried per
     * data-parallel rank ({@link ValueSpec.Scope#PER_DATA_RANK}: new rank d takes old rank d's value,
     * a new rank beyond the old ones rank 0's). Refused unless the newest generation was saved under
     * T = P = 1.
     */
    public Model wholeTrees(String job, Map<Integer, InetSocketAddress> known) throws IOException, InterruptedException {
        if (generations.current(job).isEmpty()) {
            throw new IllegalArgumentException("no model in the request and none stored with job " + job + ", and no "
                    + "complete generation whose trees a data-parallel change could copy; save a step first (a job "
                    + "that changes T or P saves with spec= or rules=)");
        }
        Listed l = listed(job, known, "has");
        if (l.placed().config().tp() != 1 || l.placed().config().pp() != 1) {
            throw new IllegalArgumentException("no model in the request and none stored with job " + job + ": its "
                    + "generation " + l.generation() + " was saved under " + l.placed().config() + ", not T = P = 1, so "
                    + "its shards cannot be cut without a description (save with spec= or rules=)");
        }
        ShardInference.Saved saved = l.byRank().get(0);
        if (saved == null) {
            throw new IllegalArgumentException("rank 0 of generation " + l.generation() + " of job " + job
                    + " saved nothing: nothing to copy to the new ranks");
        }
        List<io.tenplex.ptc.TensorSpec> tensors = new ArrayList<>();
        int layers = 1;
        for (Map.Entry<String, io.tenplex.ptc.TensorMeta> e : saved.tensors().entrySet()) {
            int layer = io.tenplex.ptc.TensorSpec.layerIn(e.getKey());
            layers = Math.max(layers, layer + 1);
            tensors.add(new io.tenplex.ptc.TensorSpec(e.getKey(), e.getValue().dtype(), e.getValue().shape(),
                    layer < 0 ? io.tenplex.ptc.Placement.first() : io.tenplex.ptc.Placement.layer(layer),
                    new io.tenplex.ptc.Partition.Replicated()));
        }
        return new Model(tensors, saved.values().stream().map(k -> new ValueSpec(k, ValueSpec.Scope.PER_DATA_RANK))
                .toList(), layers);
    }

    /** What data-parallel index 0 of the job's newest complete generation saved, and under which configuration. */
    private record Listed(long generation, ConfigJson.Placed placed, Map<Integer, ShardInference.Saved> byRank) {}

    /** The model of the job's newest complete generation under {@code rules}, its shards listed on {@code known} (by worker). */
    public Model infer(String job, PartitionRules rules, Map<Integer, InetSocketAddress> known)
            throws IOException, InterruptedException {
        Listed l = listed(job, known, "has partition rules but");
        try {
            return ShardInference.infer(l.byRank(), l.placed().config(), RankLayout.MEGATRON, rules);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the model of job " + job + " cannot be inferred from generation "
                    + l.generation() + " under the stored rules: " + e.getMessage(), e);
        }
    }

    private Listed listed(String job, Map<Integer, InetSocketAddress> known, String what)
            throws IOException, InterruptedException {
        long g = generations.current(job).orElseThrow(() -> new IllegalArgumentException("job " + job + " " + what
                + " no complete generation to infer its model from; save a step first, or give a model"));
        JsonNode config = generations.config(job, g);
        if (config == null) {
            throw new IllegalArgumentException("generation " + g + " of job " + job + " was saved without its "
                    + "configuration, so its model cannot be inferred; save with config (TENPLEX_CONFIG), or give a model");
        }
        ConfigJson.Placed placed = ConfigJson.placed(config, "generation " + g);
        Map<Integer, InetSocketAddress> holders = new TreeMap<>();
        for (int r = 0; r < placed.devices().size(); r++) {
            if (RankLayout.MEGATRON.coord(r, placed.config()).dp() != 0) {
                continue; // the other replicas saved the same shards
            }
            int worker = placed.devices().get(r).worker();
            InetSocketAddress a = known.get(worker);
            if (a == null) {
                throw new IllegalArgumentException("rank " + r + " of generation " + g + " is on worker " + worker
                        + ", which has no daemon address (start tenplexd with --peers) to list its shards on");
            }
            holders.put(r, a);
        }
        Map<Integer, ShardInference.Saved> byRank = new TreeMap<>();
        SavedTrees.list(client, new JobLayout(job, Generations.sourceDir(g), "load"), holders)
                .forEach((rank, layout) -> byRank.put(rank, layout.saved(rank)));
        return new Listed(g, placed, byRank);
    }
}
