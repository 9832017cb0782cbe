package io.tenplex.jobs.durable;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Reads a durable generation back into the store under {@code /job/<job>/generations/<step>/<rank>/},
 * checking every block's CRC32C on the way: all of its entries are published at once, or, when a block
 * is bad or missing and {@link BlockRepair} has no copy, none (a {@link DamagedGenerationException}).
 * One restore at a time.
 */
final class Restorer {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Restorer.class);
    private final TensorStore store;
    private final DurableDir dir;
    private final BlockRepair repair;
    /** One block's bytes on their way into the store, reused (restores run one at a time). */
    private ByteBuffer scratch = ByteBuffer.allocateDirect(0);

    Restorer(TensorStore store, DurableDir dir, BlockRepair repair) {
        this.store = store;
        this.dir = dir;
        this.repair = repair;
    }

    /** Publishes the ranks of {@code m} in the store as the generation's rank trees. @return the bytes read */
    long restore(DurableManifest m) throws IOException {
        StorePath gen = new JobLayout(m.job()).generation(m.step());
        return restore(m, rank -> gen.child(Integer.toString(rank)));
    }

    /** Publishes the ranks of {@code m} in the store, rank r's tree at {@code into.apply(r)}. @return the bytes read */
    long restore(DurableManifest m, java.util.function.IntFunction<StorePath> into) throws IOException {
        List<TensorStore.Put> puts = new ArrayList<>();
        Map<String, FileChannel> packs = new HashMap<>();
        List<StorePath> rankDirs = new ArrayList<>();
        long bytes = 0;
        try {
            for (Map.Entry<String, List<DurableManifest.Item>> r : m.ranks().entrySet()) {
                StorePath rank = into.apply(Integer.parseInt(r.getKey()));
                rankDirs.add(rank);
                for (DurableManifest.Item item : r.getValue()) {
                    puts.add(read(m, Integer.parseInt(r.getKey()), rank.resolve(StorePath.parse(item.path())), item,
                            packs));
                    bytes += item.size();
                }
            }
            List<TensorStore.Put> all = List.copyOf(puts);
            puts.clear(); // the store owns the blobs now, also should the put fail
            store.putAll(all, true);
            rankDirs.forEach(store::mkdirs); // ranks that saved nothing
            return bytes;
        } finally {
            puts.forEach(p -> p.blob().release());
            for (FileChannel ch : packs.values()) {
                ch.close();
            }
        }
    }

    private TensorStore.Put read(DurableManifest m, int rank, StorePath to, DurableManifest.Item item,
            Map<String, FileChannel> packs) throws IOException {
        if (item.blockSize() <= 0 || item.size() < 0 || item.blocks() == null
                || item.blocks().size() != (item.size() + item.blockSize() - 1) / item.blockSize()) {
            throw new DamagedGenerationException(where(m, rank, item) + ": "
                    + (item.blocks() == null ? 0 : item.blocks().size()) + " blocks listed for "
                    + item.size() + " bytes in blocks of " + item.blockSize());
        }
        TensorMeta meta = DurableManifest.Item.TENSOR.equals(item.type())
                ? new TensorMeta(DType.fromName(item.dtype()), Shape.of(item.shape().stream().mapToLong(Long::longValue)
                        .toArray())) : null;
        BlobWriter w = BlobWriter.allocate(store.allocator(), item.size(), store.checksumBlock());
        try {
            ByteBuffer buf = scratch((int) Math.min(item.blockSize(), Math.max(1, item.size())));
            for (int i = 0; i < item.blocks().size(); i++) {
                buf.clear().limit((int) item.blockLength(i));
                fill(m, rank, item, i, buf, packs);
                w.append(buf.flip());
            }
            return new TensorStore.Put(to, meta, w.take(), w.checksums());
        } finally {
            w.close();
        }
    }

    private ByteBuffer scratch(int size) {
        if (scratch.capacity() < size) {
            scratch = ByteBuffer.allocateDirect(size);
        }
        return scratch;
    }

    /** Reads block {@code i} into {@code buf} and checks it, or gets it from {@link BlockRepair}. */
    private void fill(DurableManifest m, int rank, DurableManifest.Item item, int i, ByteBuffer buf,
            Map<String, FileChannel> packs) throws IOException {
        DurableManifest.Block b = item.blocks().get(i);
        int expected = Integer.parseUnsignedInt(b.crc32c(), 16);
        String problem = readBlock(m.job(), b, buf, packs);
        if (problem == null && Crc32c.of(buf.duplicate().flip()) == expected) {
            return;
        }
        problem = problem != null ? problem : "CRC32C mismatch";
        Optional<ByteBuffer> fixed = repair.repair(m, rank, item.path(), (long) i * item.blockSize(),
                buf.limit(), expected);
        if (fixed.isPresent() && fixed.get().remaining() == buf.limit() && Crc32c.of(fixed.get()) == expected) {
            buf.clear().limit((int) item.blockLength(i));
            buf.put(fixed.get().duplicate());
            writeBack(m, b, fixed.get().duplicate(), problem);
            return;
        }
        throw new DamagedGenerationException(where(m, rank, item) + ": block " + i + " (" + b.pack() + " at offset "
                + b.offset() + ", expected CRC32C " + b.crc32c() + "): " + problem);
    }

    /**
     * Writes a repaired block back at its place in its pack (synced), so that the next restart reads it
     * from disk and a differential flush that reuses the block points at good bytes. A failure is logged:
     * the generation is served from memory all the same.
     */
    private void writeBack(DurableManifest m, DurableManifest.Block b, ByteBuffer bytes, String problem) {
        try (FileChannel ch = FileChannel.open(dir.pack(m.job(), b.pack()), StandardOpenOption.WRITE,
                StandardOpenOption.CREATE)) {
            long at = b.offset();
            while (bytes.hasRemaining()) {
                at += ch.write(bytes, at);
            }
            ch.force(false);
            LOG.info("durable block repaired job={} step={} pack={} offset={} ({})", m.job(), m.step(), b.pack(),
                    b.offset(), problem);
        } catch (IOException | RuntimeException e) {
            LOG.warn("durable block repaired in memory but not on disk job={} step={} pack={} offset={}: {}", m.job(),
                    m.step(), b.pack(), b.offset(), e.toString());
        }
    }

    /** Reads the block's bytes; a description of what went wrong, or null. */
    private String readBlock(String job, DurableManifest.Block b, ByteBuffer buf, Map<String, FileChannel> packs)
            throws IOException {
        FileChannel ch;
        try {
            ch = packs.get(b.pack());
            if (ch == null) {
                java.nio.file.Path pack = dir.pack(job, b.pack());
                if (java.nio.file.Files.exists(pack) && !java.nio.file.Files.isRegularFile(pack)) {
                    return "the pack is not a regular file"; // a FIFO would block the open
                }
                ch = FileChannel.open(pack, StandardOpenOption.READ);
                packs.put(b.pack(), ch);
            }
        } catch (NoSuchFileException e) {
            return "the pack file is missing";
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
        long at = b.offset();
        while (buf.hasRemaining()) {
            int n = ch.read(buf, at);
            if (n < 0) {
                return "the pack file ends at " + ch.size() + " bytes";
            }
            at += n;
        }
        return null;
    }

    private static String where(DurableManifest m, int rank, DurableManifest.Item item) {
        return "job=" + m.job() + " step=" + m.step() + " rank=" + rank + " entry=" + item.path();
    }
}
