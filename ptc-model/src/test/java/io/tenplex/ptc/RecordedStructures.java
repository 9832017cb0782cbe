package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;

/** The recorded Megatron-LM checkpoint structures under {@code megatron-structures/} (test data, see its README). */
public final class RecordedStructures {
    private RecordedStructures() {
    }

    public static final String[] CONFIGS = {"pp01/mp01/dp02", "pp01/mp02/dp01", "pp01/mp04/dp01", "pp02/mp01/dp01",
        "pp02/mp02/dp01", "pp02/mp04/dp01"};
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One recorded configuration: the structure of each data-parallel-0 rank. */
    public record Recorded(ParallelConfig config, Map<Integer, JsonNode> byRank) {}

    /** Loads {@code pp<P>/mp<T>/dp<D>}. */
    public static Recorded load(String dir) throws IOException {
        String[] parts = dir.split("/");
        int pp = Integer.parseInt(parts[0].substring(2));
        int tp = Integer.parseInt(parts[1].substring(2));
        int dp = Integer.parseInt(parts[2].substring(2));
        ParallelConfig c = ParallelConfig.of(tp, pp, dp);
        JsonNode rankMap = read(dir + "/rank_map.json");
        Map<Integer, JsonNode> byRank = new LinkedHashMap<>();
        for (var it = rankMap.fields(); it.hasNext(); ) {
            var e = it.next();
            int rank = Integer.parseInt(e.getKey());
            if (e.getValue().get("dp_rank").asInt() != 0) {
                continue; // Megatron saves from data-parallel rank 0 only
            }
            int t = e.getValue().get("mp_rank").asInt();
            int p = e.getValue().get("pp_rank").asInt();
            assertEquals(rank, RankLayout.MEGATRON.rank(new RankLayout.Coord(t, e.getValue().get("dp_rank").asInt(), p), c));
            String file = String.format("%s/rank%02d/mp_rank_%02d%s.json", dir, rank, t, pp > 1 ? String.format("_%03d", p) : "");
            byRank.put(rank, read(file));
        }
        return new Recorded(c, byRank);
    }

    private static JsonNode read(String path) throws IOException {
        try (InputStream in = RecordedStructures.class.getResourceAsStream("/megatron-structures/gpt/large/" + path)) {
            if (in == null) {
                throw new IOException("missing test resource " + path);
            }
            return JSON.readTree(in);
        }
    }
}
