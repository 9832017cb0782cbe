package io.tenplex.jobs.durable;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Flushes to a real directory and restores into a fresh store, with odd sizes and damaged files. */
class DurableTierTest {
    static final int BLOCK = 4096;
    /** f32 [333, 77]: 102564 bytes, 26 blocks, the last one short. */
    static final TensorMeta ODD = TensorMeta.of(DType.fromName("f32"), 333, 77);
    /** bf16 [1001, 3]: 6006 bytes, 2 blocks. */
    static final TensorMeta BF16 = TensorMeta.of(DType.fromName("bf16"), 1001, 3);

    @TempDir
    Path dir;
    private Node a;
    private Node b;
    private final Random random = new Random(17);

    /** One daemon's store, generations and durable tier over {@link #dir}. */
    final class Node implements AutoCloseable {
        final TensorStore store = new TensorStore(new Allocator(64L << 20), BLOCK);
        final Generations generations = new Generations(store);
        final DurableTier tier;

        Node() {
            generations.tiers().setDefaults(new Tiers.Settings(0, 0, 0, DurableTier.DEFAULT_KEEP));
            tier = new DurableTier(dir, store, generations, Runnable::run, BlockRepair.NONE);
            generations.addListener(tier);
        }

        @Override
        public void close() {
            store.close(); // fails if a reference leaked
        }
    }

    @org.junit.jupiter.api.BeforeEach
    void start() {
        a = new Node();
    }

    @AfterEach
    void close() {
        a.close();
        if (b != null) {
            b.close();
        }
    }

    private byte[] bytes(int n) {
        byte[] out = new byte[n];
        random.nextBytes(out);
        return out;
    }

    /** Saves the given tensors for ranks 0 and 1 and completes {@code step} (world 2). */
    private void saveAndSeal(long step, Map<String, byte[]> rank0, Map<String, byte[]> rank1) throws Exception {
        saveAndSeal(a, step, rank0, rank1);
    }

    private static void saveAndSeal(Node n, long step, Map<String, byte[]> rank0, Map<String, byte[]> rank1)
            throws Exception {
        put(n, 0, rank0);
        put(n, 1, rank1);
        JsonNode config = new ObjectMapper().readTree("{\"tp\": 2}");
        n.generations.seal("j", step, 0, 2, config);
        n.generations.seal("j", step, 1, 2, config);
        n.generations.sealed("j", step, List.of(0, 1), 2, config);
    }

    private static void put(Node n, int rank, Map<String, byte[]> tensors) {
        tensors.forEach((name, data) -> {
            String p = "/job/j/save/" + rank + "/" + name;
            if (name.endsWith(".bf16")) {
                Fixtures.putTensor(n.store, p, BF16, data, true);
            } else if (name.endsWith(".txt")) {
                Fixtures.putFile(n.store, p, data, true);
            } else {
                Fixtures.putTensor(n.store, p, ODD, data, true);
            }
        });
    }

    @Test
    void afterARestart_theNextFlushIsDifferentialAgainstTheRestoredGeneration() throws Exception {
        byte[] frozen = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("frozen", frozen, "tuned", bytes(frozen.length)), Map.of());
        b = new Node();
        b.tier.restore();
        assertTrue(b.tier.lastFlush("j").isEmpty(), "a restored generation is not flushed again");
        saveAndSeal(b, 20, Map.of("frozen", frozen, "tuned", bytes(frozen.length)), Map.of());
        FlushStats s = b.tier.lastFlush("j").orElseThrow();
        assertEquals(ODD.byteSize(), s.bytesWritten(), "only the tuned tensor");
        assertEquals(OptionalLong.of(20), b.generations.current("j"));
    }

    private static byte[] read(TensorStore s, String path) {
        return Fixtures.readAll(s, path);
    }

    @Test
    void flushedGeneration_restoresIntoAFreshStore_bitForBit() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        byte[] h = bytes((int) BF16.byteSize());
        byte[] note = bytes(10);
        saveAndSeal(10, Map.of("model/w", w, "model/h.bf16", h), Map.of("rng.txt", note));
        assertEquals(List.of(Tiers.MEMORY, Tiers.DURABLE), a.generations.tiers().levels("j", 10));
        assertTrue(Files.isRegularFile(dir.resolve("jobs/j/10/manifest.json")));

        b = new Node();
        assertEquals(Map.of("j", List.of(10L)), b.tier.restore());
        assertEquals(OptionalLong.of(10), b.generations.current("j"));
        assertArrayEquals(w, read(b.store, "/job/j/generations/10/0/model/w"));
        assertArrayEquals(h, read(b.store, "/job/j/generations/10/0/model/h.bf16"));
        assertArrayEquals(note, read(b.store, "/job/j/generations/10/1/rng.txt"));
        try (DataRef ref = b.store.open(StorePath.parse("/job/j/generations/10/0/model/h.bf16"))) {
            assertEquals(BF16, ref.meta());
        }
        assertEquals(2, b.generations.config("j", 10).path("tp").asInt());
        assertEquals(List.of(Tiers.MEMORY, Tiers.DURABLE), b.generations.tiers().levels("j", 10));
        assertTrue(b.store.stat(StorePath.parse("/job/j/generations/10/manifests/1.json")).isPresent());
        assertTrue(b.generations.describe("j").generations().get(0).complete());
    }

    /**
     * The job's model spec and run record flushed with its generation come back with it; a file the
     * store no longer has is no longer kept; one the restarted store has already is left as it is; a
     * removed job's are gone.
     */
    @Test
    void controlFiles_areKeptWithTheGeneration_andRestoredWithIt() throws Exception {
        Fixtures.putFile(a.store, "/job/j/model.json", "{\"layers\": []}".getBytes(StandardCharsets.UTF_8), true);
        Fixtures.putFile(a.store, "/job/j/run.json", "{\"state\": \"running\"}".getBytes(StandardCharsets.UTF_8), true);
        Fixtures.putFile(a.store, "/job/j/rules.json", "{}".getBytes(StandardCharsets.UTF_8), true);
        saveAndSeal(10, Map.of("w", bytes((int) ODD.byteSize())), Map.of());
        a.store.delete(StorePath.parse("/job/j/rules.json"));
        saveAndSeal(20, Map.of("w", bytes((int) ODD.byteSize())), Map.of());
        assertTrue(Files.isRegularFile(dir.resolve("jobs/j/control/model.json")));
        assertFalse(Files.exists(dir.resolve("jobs/j/control/rules.json")), "removed from the store: not kept");

        b = new Node();
        Fixtures.putFile(b.store, "/job/j/run.json", "{\"state\": \"new\"}".getBytes(StandardCharsets.UTF_8), true);
        assertEquals(Map.of("j", List.of(20L, 10L)), b.tier.restore());
        assertEquals("{\"layers\": []}", new String(read(b.store, "/job/j/model.json"), StandardCharsets.UTF_8));
        assertEquals("{\"state\": \"new\"}", new String(read(b.store, "/job/j/run.json"), StandardCharsets.UTF_8),
                "what the store has already is left as it is");
        assertTrue(b.store.stat(StorePath.parse("/job/j/rules.json")).isEmpty());
        b.tier.remove("j");
        assertFalse(Files.exists(dir.resolve("jobs/j/control")), "removed with the job");
    }

    @Test
    void differentialFlush_writesOnlyTheChangedBlocks() throws Exception {
        byte[] frozen = bytes((int) ODD.byteSize());
        byte[] tuned = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("frozen", frozen, "tuned", tuned), Map.of());
        FlushStats first = a.tier.lastFlush("j").orElseThrow();
        assertEquals(2 * ODD.byteSize(), first.bytesWritten());

        byte[] tuned2 = tuned.clone();
        tuned2[5 * BLOCK + 1] ^= 1; // block 5
        tuned2[tuned2.length - 1] ^= 1; // the short last block
        saveAndSeal(20, Map.of("frozen", frozen, "tuned", tuned2), Map.of());
        FlushStats second = a.tier.lastFlush("j").orElseThrow();
        long lastBlock = ODD.byteSize() - 25L * BLOCK;
        assertEquals(BLOCK + lastBlock, second.bytesWritten());
        assertEquals(BLOCK + lastBlock, Files.size(dir.resolve("jobs/j/20/blocks.pack")));
        assertEquals(2 * ODD.byteSize(), second.logicalBytes());
        assertEquals(2, second.blocksWritten());

        saveAndSeal(30, Map.of("frozen", bytes(frozen.length), "tuned", bytes(tuned.length)), Map.of());
        assertEquals(2 * ODD.byteSize(), a.tier.lastFlush("j").orElseThrow().bytesWritten(), "all changed");

        b = new Node();
        b.tier.restore();
        assertArrayEquals(read(a.store, "/job/j/generations/30/0/frozen"), read(b.store, "/job/j/generations/30/0/frozen"));
        assertArrayEquals(tuned2, read(b.store, "/job/j/generations/20/0/tuned"));
        assertArrayEquals(frozen, read(b.store, "/job/j/generations/20/0/frozen"));
    }

    @Test
    void retention_keepsTheNewestManifests_andThePacksTheyReferTo() throws Exception {
        byte[] frozen = bytes((int) ODD.byteSize());
        for (long step = 10; step <= 40; step += 10) {
            saveAndSeal(step, Map.of("frozen", frozen, "tuned", bytes(frozen.length)), Map.of());
        }
        assertFalse(Files.exists(dir.resolve("jobs/j/10/manifest.json")));
        assertTrue(Files.exists(dir.resolve("jobs/j/10/blocks.pack")), "the frozen tensor's blocks are still used");
        assertFalse(Files.exists(dir.resolve("jobs/j/20")), "nothing refers to generation 20's pack");
        assertTrue(Files.exists(dir.resolve("jobs/j/30/manifest.json")));

        b = new Node();
        assertEquals(Map.of("j", List.of(40L, 30L)), b.tier.restore());
        assertArrayEquals(frozen, read(b.store, "/job/j/generations/40/0/frozen"));
        assertTrue(Files.exists(dir.resolve("jobs/j/10/blocks.pack")), "restart keeps referenced packs");
    }

    @Test
    void generationWithoutManifest_isNeverRestored_andIsRemoved() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("w", w), Map.of());
        saveAndSeal(20, Map.of("w", bytes(w.length)), Map.of());
        Files.delete(dir.resolve("jobs/j/20/manifest.json")); // as if the flush of 20 were cut short
        Files.writeString(dir.resolve("jobs/j/20/manifest.json.tmp"), "{\"format\":");

        b = new Node();
        assertEquals(Map.of("j", List.of(10L)), b.tier.restore());
        assertEquals(OptionalLong.of(10), b.generations.current("j"));
        assertArrayEquals(w, read(b.store, "/job/j/generations/10/0/w"));
        assertFalse(Files.exists(dir.resolve("jobs/j/20")));
        assertTrue(b.store.stat(StorePath.parse("/job/j/generations/20")).isEmpty());
    }

    @Test
    void truncatedPack_fallsBackToTheNewestIntactGeneration() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("w", w), Map.of());
        saveAndSeal(20, Map.of("w", bytes(w.length)), Map.of());
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("jobs/j/20/blocks.pack").toFile(), "rw")) {
            f.setLength(f.length() - 100);
        }
        assertRestoresOnly10(w);
    }

    @Test
    void flippedByte_fallsBackToTheNewestIntactGeneration() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("w", w), Map.of());
        saveAndSeal(20, Map.of("w", bytes(w.length)), Map.of());
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("jobs/j/20/blocks.pack").toFile(), "rw")) {
            f.seek(7 * BLOCK + 3);
            int v = f.read();
            f.seek(7 * BLOCK + 3);
            f.write(v ^ 0x40);
        }
        assertRestoresOnly10(w);
    }

    @Test
    void missingPack_fallsBackToTheNewestIntactGeneration() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("w", w), Map.of());
        saveAndSeal(20, Map.of("w", bytes(w.length)), Map.of());
        Files.delete(dir.resolve("jobs/j/20/blocks.pack"));
        assertRestoresOnly10(w);
    }

    @Test
    void damagedBlock_isRepairedWhenARepairHasIt() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("w", w), Map.of());
        Files.delete(dir.resolve("jobs/j/10/blocks.pack"));
        b = new Node();
        DurableTier repaired = new DurableTier(dir, b.store, b.generations, Runnable::run,
                (generation, rank, path, offset, length, crc) -> java.util.Optional.of(java.nio.ByteBuffer.wrap(w,
                        (int) offset, length).slice()));
        assertEquals(Map.of("j", List.of(10L)), repaired.restore());
        assertArrayEquals(w, read(b.store, "/job/j/generations/10/0/w"));
        b.close();
        b = new Node(); // the repaired blocks were written back: a restore without a repair reads them from disk
        assertEquals(Map.of("j", List.of(10L)), new DurableTier(dir, b.store, b.generations, Runnable::run,
                BlockRepair.NONE).restore());
        assertArrayEquals(w, read(b.store, "/job/j/generations/10/0/w"));
    }

    @Test
    void manifestWithAWorldOrRanksOutOfRange_isNotRestored_andNothingIsRepairedFromIt() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("w", w), Map.of());
        Files.delete(dir.resolve("jobs/j/10/blocks.pack")); // every block must be repaired
        Path manifest = dir.resolve("jobs/j/10/manifest.json");
        ObjectMapper json = new ObjectMapper();
        byte[] good = Files.readAllBytes(manifest);
        for (String bad : new String[] {"world=16385", "world=0", "rank=2", "rank=-1", "rank=01"}) {
            com.fasterxml.jackson.databind.node.ObjectNode m = (com.fasterxml.jackson.databind.node.ObjectNode) json
                    .readTree(good);
            if (bad.startsWith("world=")) {
                m.put("world", Integer.parseInt(bad.substring(6)));
            } else {
                com.fasterxml.jackson.databind.node.ObjectNode ranks = (com.fasterxml.jackson.databind.node.ObjectNode) m
                        .get("ranks");
                ranks.set(bad.substring(5), ranks.remove("0"));
            }
            Files.write(manifest, json.writeValueAsBytes(m));
            java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
            try (Node n = new Node()) {
                DurableTier t = new DurableTier(dir, n.store, n.generations, Runnable::run,
                        (generation, rank, path, offset, length, crc) -> {
                            asked.incrementAndGet();
                            return java.util.Optional.empty();
                        });
                assertEquals(Map.of(), t.restore(), bad);
                assertEquals(0, asked.get(), bad + ": a repair was asked for a generation of a manifest out of range");
            }
        }
    }

    @Test
    void unreadableManifest_fallsBackToTheNewestIntactGeneration() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("w", w), Map.of());
        saveAndSeal(20, Map.of("w", bytes(w.length)), Map.of());
        Path m = dir.resolve("jobs/j/20/manifest.json");
        Files.writeString(m, Files.readString(m).substring(0, 200)); // cut mid-JSON
        assertRestoresOnly10(w);
    }

    @Test
    void manifestListingTooFewBlocks_isDamaged() throws Exception {
        byte[] w = bytes((int) ODD.byteSize());
        saveAndSeal(10, Map.of("w", w), Map.of());
        saveAndSeal(20, Map.of("w", bytes(w.length)), Map.of());
        Path m = dir.resolve("jobs/j/20/manifest.json");
        Files.writeString(m, Files.readString(m).replace("\"size\" : " + ODD.byteSize(),
                "\"size\" : " + (ODD.byteSize() + BLOCK)));
        assertRestoresOnly10(w);
    }

    @Test
    void jobWithoutDurableKeep_isNotFlushed() throws Exception {
        a.generations.tiers().set("j", new Tiers.Settings(0, 0, 0, 0));
        saveAndSeal(10, Map.of("w", bytes((int) ODD.byteSize())), Map.of());
        assertFalse(Files.exists(dir.resolve("jobs/j")));
        assertEquals(List.of(Tiers.MEMORY), a.generations.tiers().levels("j", 10));
    }

    @Test
    void flushStats_showInTheGenerationsStatus() throws Exception {
        saveAndSeal(10, Map.of("w", bytes((int) ODD.byteSize())), Map.of());
        Map<String, Long> d = a.generations.describe("j").generations().get(0).levelDetails().get(Tiers.DURABLE);
        assertEquals(ODD.byteSize(), d.get("bytesWritten"));
        assertEquals(ODD.byteSize(), d.get("logicalBytes"));
    }

    private void assertRestoresOnly10(byte[] w) throws Exception {
        b = new Node();
        assertEquals(Map.of("j", List.of(10L)), b.tier.restore());
        assertEquals(OptionalLong.of(10), b.generations.current("j"));
        assertArrayEquals(w, read(b.store, "/job/j/generations/10/0/w"));
        assertTrue(b.store.stat(StorePath.parse("/job/j/generations/20")).isEmpty(), "never served");
        assertTrue(Files.exists(dir.resolve("jobs/j/20/manifest.json")), "kept for a later repair");
        // the fallback is not silent: the generations' status names the lost step and why
        var lost = b.generations.describe("j").generations().stream().filter(g -> g.step() == 20).findFirst()
                .orElseThrow();
        assertTrue(lost.lost() != null && lost.lost().contains("durable copy damaged"), String.valueOf(lost));
        assertFalse(lost.complete());
    }
}
