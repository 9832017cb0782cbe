package io.tenplex.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A rank's saved tree against the model spec stored with its job, at the rank's seal: every tensor of
 * the tree that the description places on that rank, under the configuration the seal names, must have
 * the dtype and shape of the shard the description gives the rank (as a reconfiguration reads it:
 * {@link MegatronLayout#asSaved}, optimizer state keyed as {@link CheckpointLayout} keys it). A
 * contradiction is refused (400) before anything of the seal is committed, naming the tensor, its
 * partition and both shapes; a reconfiguration would otherwise find it only at the first change. Read
 * from the tree's metadata only; tensors and files the description does not place are not looked at.
 */
final class SavedShardCheck {
    /** The contradictions named one by one in a refusal; more are counted. */
    static final int NAMED = 3;

    private final TensorStore store;

    SavedShardCheck(TensorStore store) {
        this.store = store;
    }

    /**
     * Checks the tree at {@code saved} that {@code rank} seals under {@code config}; nothing to check
     * without a stored model spec, a configuration (one that covers the rank) or a saved tree.
     *
     * @throws StoreException bad request, when the description contradicts the saved shards or cannot be
     *     placed under the seal's configuration
     */
    void check(String job, int rank, JsonNode config, StorePath saved) {
        if (config == null || !config.isObject() || store.stat(saved).isEmpty()) {
            return;
        }
        ParallelConfig c;
        try {
            c = ParallelConfigJson.parse(config, "config: ");
        } catch (IllegalArgumentException e) {
            return; // not a configuration a description could be placed under: the seal keeps it as given
        }
        if (rank >= c.worldSize()) {
            return;
        }
        Optional<String> spec = SmallFiles.read(store, new JobLayout(job).modelSpec());
        if (spec.isEmpty()) {
            return;
        }
        List<String> wrong = mismatches(job, rank, placed(job, rank, spec.get(), c), items(saved));
        if (!wrong.isEmpty()) {
            String more = wrong.size() > NAMED ? "; and " + (wrong.size() - NAMED) + " more tensors" : "";
            throw refused(job, rank, "under " + c + " tensor " + String.join("; tensor ", wrong.subList(0,
                    Math.min(NAMED, wrong.size()))) + more + "; correct the description (spec=) or what the rank "
                    + "saves");
        }
    }

    /** Each tensor of {@code items} the description places on {@code rank} whose dtype or shape differs, described. */
    private static List<String> mismatches(String job, int rank, Ptc ptc, List<CheckpointLayout.Item> items) {
        Map<String, TensorMeta> metas = new HashMap<>();
        items.forEach(it -> metas.put(it.path(), it.meta()));
        CheckpointLayout layout;
        try {
            layout = CheckpointLayout.of(items);
        } catch (IllegalArgumentException e) {
            throw refused(job, rank, "its saved tree cannot be read against it: " + e.getMessage());
        }
        List<String> wrong = new ArrayList<>();
        for (Ptc.Shard s : ptc.shards(rank)) {
            String path = layout.storedTensor(s.key());
            TensorMeta found = path == null ? null : metas.get(path);
            TensorMeta described = new TensorMeta(s.spec().dtype(), s.shape());
            if (found != null && !found.equals(described)) {
                wrong.add(s.spec().name() + " (" + path + "), " + s.spec().dtype().wireName()
                        + ptc.storedShape(s.spec()) + " with partition " + rule(s.spec().partition())
                        + ", is described as " + described + " on rank " + rank + " but saved as " + found);
            }
        }
        return wrong;
    }

    /** The last description placed: every rank of a generation seals under the same one (one parse, not one per rank). */
    private record Placed(String spec, ParallelConfig config, Ptc ptc) {
    }

    private static volatile Placed last;

    /** The stored model as {@code c} saves it, placed; a description that cannot be placed is refused. */
    private static Ptc placed(String job, int rank, String spec, ParallelConfig c) {
        Placed p = last;
        if (p != null && p.config().equals(c) && p.spec().equals(spec)) {
            return p.ptc();
        }
        try {
            Model model = MegatronLayout.asSaved(ModelSpecJson.parse(spec), c.pp());
            Ptc ptc = new Ptc(model, c, RankLayout.MEGATRON, StageMap.uniform(model.layers(), c.pp()),
                    Ptc.packedDevices(c.worldSize(), c.worldSize()));
            last = new Placed(spec, c, ptc);
            return ptc;
        } catch (IllegalArgumentException e) {
            throw refused(job, rank, "it cannot be placed under " + c + ": "
                    + e.getMessage());
        }
    }

    private static StoreException refused(String job, int rank, String why) {
        return StoreException.badRequest("rank " + rank + " of job " + job + " does not match the model spec stored "
                + "with the job (" + new JobLayout(job).modelSpec() + "): " + why + "; nothing was sealed: save again");
    }

    /** The saved tree's tensors and files, relative to {@code saved}, with the tensors' dtypes and shapes. */
    private List<CheckpointLayout.Item> items(StorePath saved) {
        String root = saved + "/";
        List<CheckpointLayout.Item> items = new ArrayList<>();
        for (Entry e : store.walk(saved, false)) {
            String p = e.path().toString();
            if (!p.startsWith(root)) {
                continue;
            }
            boolean tensor = e.type() == EntryType.TENSOR;
            items.add(new CheckpointLayout.Item(p.substring(root.length()), tensor,
                    tensor ? e.meta().shape().rank() : 0, tensor ? e.meta() : null));
        }
        return items;
    }

    /** A partition as the model spec and the partition rules name it, e.g. {@code column (split dim 0)}. */
    static String rule(Partition p) {
        if (p instanceof Partition.Split s) {
            String name = s.dim() == 0 ? "column (split dim 0" : s.dim() == 1 ? "row (split dim 1" : "split (dim "
                    + s.dim();
            return name + (s.granule() == 1 ? "" : ", granule " + s.granule()) + ")";
        }
        if (p instanceof Partition.VocabSplit v) {
            return "vocab (split dim " + v.dim() + ", padded to a multiple of " + v.divisibleBy() + "·T)";
        }
        if (p instanceof Partition.Expert e) {
            return "expert " + e.expert() + " of " + e.experts() + ", " + rule(e.inner());
        }
        return "replicated";
    }
}
