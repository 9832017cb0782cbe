package io.tenplex.jobs.durable;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The manifest of one durable generation ({@code DIR/jobs/<job>/<step>/manifest.json}): what a reader
 * needs to restore the ranks this daemon held, and nothing else. Its presence under its final name is
 * what makes a generation durable; see {@code docs/DURABLE.md}.
 *
 * @param format always {@link #FORMAT}
 * @param version the format version ({@link #VERSION})
 * @param job the job
 * @param step the generation's step
 * @param world the number of ranks of the save (all of them, not only those here)
 * @param config the parallel configuration recorded with the generation, or null
 * @param durableKeep the job's retention when it was flushed (restored with it)
 * @param logicalBytes bytes of the ranks' entries
 * @param bytesWritten bytes this flush wrote to its pack (the rest refer to older packs)
 * @param ranks rank (decimal) to its entries, in the rank tree's order
 * @param levels the job's partner copies and erasure coding when it was flushed (restored with it, so a
 *     restarted daemon repairs from them and keeps them); absent in manifests written before it existed
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record DurableManifest(String format, int version, String job, long step, int world, JsonNode config,
        int durableKeep, long logicalBytes, long bytesWritten, Map<String, List<Item>> ranks, Levels levels) {
    public static final String FORMAT = "tenplex-durable-generation";
    public static final int VERSION = 1;

    public DurableManifest {
        Objects.requireNonNull(ranks, "ranks");
        ranks = Map.copyOf(ranks);
    }

    /** The job's L2 and L3 settings ({@code partners}, {@code groupSize} k, {@code parity} m). */
    public record Levels(int partners, int groupSize, int parity) {
    }

    /**
     * One file or tensor of a rank tree.
     *
     * @param path the path inside the rank's tree ({@code model/layer1/w})
     * @param type {@code tensor} or {@code file}
     * @param dtype the tensor's dtype wire name (null for a file)
     * @param shape the tensor's shape (null for a file)
     * @param size bytes
     * @param blockSize bytes per block (the last block may be shorter)
     * @param blocks one per block, in order
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Item(String path, String type, String dtype, List<Long> shape, long size, int blockSize,
            List<Block> blocks) {
        public static final String TENSOR = "tensor";
        public static final String FILE = "file";

        /** The length of block {@code i}. */
        public long blockLength(int i) {
            return Math.min(blockSize, size - (long) i * blockSize);
        }
    }

    /**
     * Where one block's bytes are.
     *
     * @param crc32c the block's CRC32C, 8 lower-case hex digits
     * @param pack the pack file holding it, relative to the job's directory ({@code 120/blocks.pack})
     * @param offset the byte offset in the pack
     */
    public record Block(String crc32c, String pack, long offset) {
    }
}
