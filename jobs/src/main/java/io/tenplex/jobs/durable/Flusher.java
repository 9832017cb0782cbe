package io.tenplex.jobs.durable;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.store.DataRef;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;

/**
 * Writes one complete generation's rank trees from the store to the durable directory: blocks whose
 * CRC32C differs from the same entry's block in {@code base} (the last flushed generation) go to this
 * generation's pack, the others are referred to where they already are; then the manifest, whole.
 */
final class Flusher {
    private final TensorStore store;
    private final DurableDir dir;
    private final ObjectMapper json = new ObjectMapper();

    Flusher(TensorStore store, DurableDir dir) {
        this.store = store;
        this.dir = dir;
    }

    /**
     * Flushes generation {@code step} of {@code job}.
     *
     * @param base the job's last flushed manifest, or null (everything is written)
     * @param tiers the job's levels; its retention and L2/L3 settings are recorded in the manifest
     * @return the manifest written and what it cost
     * @throws StoreException not found when the generation is no longer in the store
     */
    Result flush(String job, long step, DurableManifest base, Tiers.Settings tiers) throws IOException {
        long start = System.nanoTime();
        JsonNode g = json.readTree(SmallFiles.read(store, new JobLayout(job).generation(step).child("generation.json"))
                .orElseThrow(() -> StoreException.notFound("generation " + step + " of job " + job + " is not here")));
        try (RankTrees trees = RankTrees.open(store, job, step)) {
            Path gen = dir.createGeneration(job, step);
            Counts c = new Counts();
            Map<String, List<DurableManifest.Item>> ranks = new LinkedHashMap<>();
            try (FileChannel pack = FileChannel.open(gen.resolve(DurableDir.PACK), StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                Blocks blocks = new Blocks(pack, DurableDir.packName(step), index(base), c);
                for (Map.Entry<Integer, List<RankTrees.Opened>> r : trees.ranks().entrySet()) {
                    List<DurableManifest.Item> items = new ArrayList<>();
                    for (RankTrees.Opened o : r.getValue()) {
                        items.add(blocks.item(r.getKey(), o));
                    }
                    ranks.put(Integer.toString(r.getKey()), items);
                }
                pack.force(true);
            }
            if (c.written == 0) {
                Files.deleteIfExists(gen.resolve(DurableDir.PACK)); // nothing refers to an empty pack
            }
            JsonNode config = g.path("config").isMissingNode() || g.path("config").isNull() ? null : g.get("config");
            DurableManifest m = new DurableManifest(DurableManifest.FORMAT, DurableManifest.VERSION, job, step,
                    g.path("world").asInt(), config, tiers.durableKeep(), c.logical, c.written, ranks,
                    new DurableManifest.Levels(tiers.partners(), tiers.groupSize(), tiers.parity()));
            dir.writeManifest(m);
            return new Result(m, new FlushStats(job, step, c.logical, c.written, c.blocksWritten, c.blocksReused,
                    (System.nanoTime() - start) / 1_000_000));
        }
    }

    /** A flush's manifest and its cost. */
    record Result(DurableManifest manifest, FlushStats stats) {
    }

    private static final class Counts {
        long logical;
        long written;
        long blocksWritten;
        long blocksReused;
    }

    /** rank to path to item of a manifest. */
    private static Map<Integer, Map<String, DurableManifest.Item>> index(DurableManifest base) {
        Map<Integer, Map<String, DurableManifest.Item>> out = new HashMap<>();
        if (base != null) {
            base.ranks().forEach((r, items) -> {
                Map<String, DurableManifest.Item> byPath = new HashMap<>();
                items.forEach(i -> byPath.put(i.path(), i));
                out.put(Integer.parseInt(r), byPath);
            });
        }
        return out;
    }

    /** Appends changed blocks to one pack and describes every entry's blocks. */
    private static final class Blocks {
        private final FileChannel pack;
        private final String packName;
        private final Map<Integer, Map<String, DurableManifest.Item>> base;
        private final Counts c;

        Blocks(FileChannel pack, String packName, Map<Integer, Map<String, DurableManifest.Item>> base, Counts c) {
            this.pack = pack;
            this.packName = packName;
            this.base = base;
            this.c = c;
        }

        DurableManifest.Item item(int rank, RankTrees.Opened o) throws IOException {
            DataRef ref = o.ref();
            BlockChecksums sums = ref.checksums() != null ? ref.checksums() : null;
            int blockSize = sums != null ? sums.blockSize() : BlockChecksums.DEFAULT_BLOCK;
            DurableManifest.Item old = base.getOrDefault(rank, Map.of()).get(o.path());
            boolean comparable = old != null && old.blockSize() == blockSize;
            int n = (int) ((ref.size() + blockSize - 1) / blockSize);
            List<DurableManifest.Block> blocks = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                long off = (long) i * blockSize;
                long len = Math.min(blockSize, ref.size() - off);
                String crc = Crc32c.hex(sums != null ? sums.block(i) : crcOf(ref, off, len));
                DurableManifest.Block prev = comparable && i < old.blocks().size() && old.blockLength(i) == len
                        ? old.blocks().get(i) : null;
                blocks.add(prev != null && prev.crc32c().equals(crc) ? reuse(prev) : write(ref, off, len, crc));
            }
            c.logical += ref.size();
            boolean tensor = ref.type() == EntryType.TENSOR;
            return new DurableManifest.Item(o.path(), tensor ? DurableManifest.Item.TENSOR : DurableManifest.Item.FILE,
                    tensor ? ref.meta().dtype().wireName() : null,
                    tensor ? LongStream.of(ref.meta().shape().dims()).boxed().toList() : null, ref.size(), blockSize,
                    blocks);
        }

        private DurableManifest.Block reuse(DurableManifest.Block prev) {
            c.blocksReused++;
            return prev;
        }

        private DurableManifest.Block write(DataRef ref, long off, long len, String crc) throws IOException {
            long at = pack.position();
            for (ByteBuffer v : ref.views(off, len)) {
                while (v.hasRemaining()) {
                    pack.write(v);
                }
            }
            c.written += len;
            c.blocksWritten++;
            return new DurableManifest.Block(crc, packName, at);
        }

        private static int crcOf(DataRef ref, long off, long len) {
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            for (ByteBuffer v : ref.views(off, len)) {
                crc.update(v);
            }
            return (int) crc.getValue();
        }
    }
}
