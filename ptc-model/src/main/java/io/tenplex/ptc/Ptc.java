package io.tenplex.ptc;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * A parallelizable tensor collection: a model's tensors (T) under one parallel configuration, with
 * slicing and partitioning (σ, φ: which region of each tensor every tensor-parallel rank holds,
 * given by each tensor's {@link Partition}), pipeline placement (through a {@link StageMap}) and
 * allocation (α: the device of every global rank). Immutable; construction validates that every
 * tensor can be cut as asked, with messages that name the tensor and the sizes.
 *
 * <p>Regions are in the tensor's stored global coordinates: a vocabulary dimension is padded for
 * this configuration's T (see {@link Partition.VocabSplit}).
 */
public final class Ptc {
    private final Model model;
    private final ParallelConfig config;
    private final RankLayout layout;
    private final StageMap stages;
    private final List<Device> devices;
    private final Map<TensorSpec, Integer> stageOf = new IdentityHashMap<>();
    private final Map<TensorSpec, String> keyOf = new IdentityHashMap<>();
    private final List<List<TensorSpec>> byStage = new ArrayList<>();
    private final List<List<TensorSpec>> byStageView = new ArrayList<>();
    private final boolean hasExperts;
    private final Map<Device, Integer> rankOn = new java.util.HashMap<>();
    private final Map<Integer, List<Integer>> ranksOnWorker = new java.util.TreeMap<>();
    private final Map<Long, int[]> holderCache = new java.util.concurrent.ConcurrentHashMap<>();

    /** One shard: what a rank holds of one tensor, under which key. */
    public record Shard(int rank, Device device, TensorSpec spec, String key, Region region) {
        public Shape shape() {
            return region.shape();
        }

        public long bytes() {
            return region.volume() * spec.dtype().itemSize();
        }
    }

    public Ptc(Model model, ParallelConfig config, RankLayout layout, StageMap stages, List<Device> devices) {
        if (stages.stages() != config.pp()) {
            throw new IllegalArgumentException("stage map has " + stages.stages() + " stages but P=" + config.pp());
        }
        if (stages.layers() != model.layers()) {
            throw new IllegalArgumentException("stage map covers " + stages.layers() + " layers but the model has "
                    + model.layers());
        }
        if (devices.size() != config.worldSize()) {
            throw new IllegalArgumentException(config + " has " + config.worldSize() + " ranks but " + devices.size()
                    + " devices were allocated");
        }
        if (devices.stream().distinct().count() != devices.size()) {
            throw new IllegalArgumentException("a device is allocated to two ranks: " + devices);
        }
        this.model = model;
        this.config = config;
        this.layout = layout;
        this.stages = stages;
        this.devices = List.copyOf(devices);
        for (int s = 0; s < config.pp(); s++) {
            byStage.add(new ArrayList<>());
        }
        for (int r = 0; r < devices.size(); r++) {
            rankOn.put(devices.get(r), r);
            ranksOnWorker.computeIfAbsent(devices.get(r).worker(), w -> new ArrayList<>()).add(r);
        }
        for (TensorSpec t : model.tensors()) {
            validate(t);
            int s = stages.stageOf(t.placement());
            stageOf.put(t, s);
            byStage.get(s).add(t);
            int local = t.placement().kind() == Placement.Kind.LAYER ? t.placement().layer() - stages.firstLayer(s) : 0;
            keyOf.put(t, t.localKey(local));
        }
        for (List<TensorSpec> stage : byStage) {
            byStageView.add(java.util.Collections.unmodifiableList(stage));
        }
        this.hasExperts = model.tensors().stream().anyMatch(t -> t.partition() instanceof Partition.Expert);
    }

    /**
     * The usual case: uniform stages, Megatron rank order, ranks packed onto workers of
     * {@code devicesPerWorker} devices in rank order (rank r on worker r / G, device r % G).
     */
    public static Ptc packed(Model model, ParallelConfig config, int devicesPerWorker) {
        return new Ptc(model, config, RankLayout.MEGATRON, StageMap.uniform(model.layers(), config.pp()),
                packedDevices(config.worldSize(), devicesPerWorker));
    }

    /** Ranks 0..n-1 on workers of G devices, in order. */
    public static List<Device> packedDevices(int ranks, int devicesPerWorker) {
        List<Device> d = new ArrayList<>(ranks);
        for (int r = 0; r < ranks; r++) {
            d.add(new Device(r / devicesPerWorker, r % devicesPerWorker));
        }
        return d;
    }

    private void validate(TensorSpec t) {
        Partition p = t.partition() instanceof Partition.Expert e ? e.inner() : t.partition();
        if (t.partition() instanceof Partition.Expert e && e.experts() % config.ep() != 0) {
            throw new IllegalArgumentException(t.name() + ": " + e.experts() + " experts cannot be partitioned over E="
                    + config.ep() + " expert-parallel ranks");
        }
        if (p instanceof Partition.Split s) {
            long size = t.shape().dim(s.dim());
            if (size % s.granule() != 0 || (size / s.granule()) % config.tp() != 0) {
                throw new IllegalArgumentException(t.name() + ": dim " + s.dim() + " of size " + size
                        + (s.granule() > 1 ? " (" + size / s.granule() + " units of " + s.granule() + ")" : "")
                        + " cannot be split into T=" + config.tp() + " equal parts");
            }
        }
    }

    public Model model() {
        return model;
    }

    public ParallelConfig config() {
        return config;
    }

    public RankLayout layout() {
        return layout;
    }

    public StageMap stages() {
        return stages;
    }

    public Device device(int rank) {
        return devices.get(rank);
    }

    public List<Device> devices() {
        return devices;
    }

    public int stage(TensorSpec t) {
        return stageOf.get(t);
    }

    /** The key under which the tensor's stage stores it (layer index renumbered within the stage). */
    public String key(TensorSpec t) {
        return keyOf.get(t);
    }

    /** The tensor's global shape as stored under this configuration (vocabulary padded for T). */
    public Shape storedShape(TensorSpec t) {
        Partition p = t.partition() instanceof Partition.Expert e ? e.inner() : t.partition();
        if (p instanceof Partition.VocabSplit v) {
            long[] d = t.shape().dims();
            d[v.dim()] = v.padded(d[v.dim()], config.tp());
            return Shape.of(d);
        }
        return t.shape();
    }

    /** How many distinct regions the tensor is cut into (T, or 1 when replicated). */
    public int cells(TensorSpec t) {
        return Partition.splitDim(t.partition()) < 0 ? 1 : config.tp();
    }

    /** The region of cell {@code i} (the region tensor-parallel rank i holds). */
    public Region cell(TensorSpec t, int i) {
        Shape stored = storedShape(t);
        Region whole = Region.whole(stored);
        int dim = Partition.splitDim(t.partition());
        if (dim < 0) {
            return whole;
        }
        long part = stored.dim(dim) / config.tp();
        return whole.with(dim, IndexRange.of(i * part, (i + 1) * part));
    }

    /** True when the expert-parallel position of data-parallel index {@code dp} holds the tensor. */
    private boolean holdsExpert(TensorSpec t, int dp) {
        if (!(t.partition() instanceof Partition.Expert e)) {
            return true;
        }
        return dp % config.ep() == e.expert() / (e.experts() / config.ep());
    }

    /** The rank on a device, or -1. */
    public int rankOn(Device d) {
        Integer r = rankOn.get(d);
        return r == null ? -1 : r;
    }

    /** The ranks on a worker, ascending (empty when none). */
    public List<Integer> ranksOnWorker(int worker) {
        return ranksOnWorker.getOrDefault(worker, List.of());
    }

    /** True when {@code rank} holds cell {@code i} of the tensor. */
    public boolean holds(int rank, TensorSpec t, int i) {
        RankLayout.Coord c = layout.coord(rank, config);
        return c.pp() == stage(t) && (cells(t) == 1 || c.tp() == i) && holdsExpert(t, c.dp());
    }

    /**
     * Identifies the set of holders of a cell: tensors of one stage cut the same way share it (the
     * same ranks hold cell i of every such tensor).
     */
    public long holderSet(TensorSpec t, int i) {
        int expert = t.partition() instanceof Partition.Expert e ? e.expert() / (e.experts() / config.ep()) : -1;
        int cell = cells(t) == 1 ? -1 : i;
        return ((long) stage(t) << 40) | ((long) (cell + 1) << 20) | (expert + 1);
    }

    /** The ranks holding cell {@code i} of the tensor, ascending (shared array: do not modify). */
    public int[] holders(TensorSpec t, int i) {
        return holderCache.computeIfAbsent(holderSet(t, i), k -> computeHolders(t, i));
    }

    private int[] computeHolders(TensorSpec t, int i) {
        int stage = stage(t);
        boolean replicated = cells(t) == 1;
        List<Integer> out = new ArrayList<>();
        for (int dp = 0; dp < config.dp(); dp++) {
            if (!holdsExpert(t, dp)) {
                continue;
            }
            if (replicated) {
                for (int tp = 0; tp < config.tp(); tp++) {
                    out.add(layout.rank(new RankLayout.Coord(tp, dp, stage), config));
                }
            } else {
                out.add(layout.rank(new RankLayout.Coord(i, dp, stage), config));
            }
        }
        return out.stream().mapToInt(Integer::intValue).sorted().toArray();
    }

    /**
     * The tensors a rank holds, in model order: those of {@link #shards(int)}, without building their
     * regions. Ranks of one stage share one list unless the model has experts. Unmodifiable.
     */
    public List<TensorSpec> tensorsOf(int rank) {
        RankLayout.Coord c = layout.coord(rank, config);
        List<TensorSpec> stage = byStageView.get(c.pp());
        if (!hasExperts) {
            return stage;
        }
        return stage.stream().filter(t -> holdsExpert(t, c.dp())).toList();
    }

    /** Everything a rank holds, in model order. */
    public List<Shard> shards(int rank) {
        RankLayout.Coord c = layout.coord(rank, config);
        List<Shard> out = new ArrayList<>();
        for (TensorSpec t : byStage.get(c.pp())) {
            if (!holdsExpert(t, c.dp())) {
                continue;
            }
            Region r = cell(t, cells(t) == 1 ? 0 : c.tp());
            out.add(new Shard(rank, devices.get(rank), t, key(t), r));
        }
        return out;
    }

    /** Which devices hold which region of tensor {@code name}: the paper's query on a PTC. */
    public List<Shard> whoHolds(String name) {
        TensorSpec t = model.tensor(name);
        List<Shard> out = new ArrayList<>();
        for (int i = 0; i < cells(t); i++) {
            Region r = cell(t, i);
            for (int rank : holders(t, i)) {
                out.add(new Shard(rank, devices.get(rank), t, key(t), r));
            }
        }
        return out;
    }

    /** The source rank of a non-tensor value for destination rank coordinates (see {@link ValueSpec}). */
    public int valueSource(ValueSpec v, int destTp, int destDp, int destPp) {
        if (v.scope() == ValueSpec.Scope.GLOBAL || destTp >= config.tp() || destPp >= config.pp()) {
            return 0;
        }
        int dp = v.scope() == ValueSpec.Scope.PER_DATA_RANK && destDp < config.dp() ? destDp : 0;
        return layout.rank(new RankLayout.Coord(destTp, dp, destPp), config);
    }

    public int worldSize() {
        return config.worldSize();
    }
}
