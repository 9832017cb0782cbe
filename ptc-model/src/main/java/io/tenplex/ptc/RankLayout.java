package io.tenplex.ptc;

import java.util.Arrays;
import java.util.List;

/**
 * Maps a global rank to its (tensor, data, pipeline) coordinates and back. The order names the
 * dimensions from fastest- to slowest-varying; Megatron-LM's default is {@code tp,dp,pp}, i.e.
 * {@code rank = pp·(T·D) + dp·T + tp}.
 */
public final class RankLayout {
    /** Megatron-LM's order: tensor fastest, then data, then pipeline. */
    public static final RankLayout MEGATRON = new RankLayout(List.of("tp", "dp", "pp"));

    private final List<String> order;

    private RankLayout(List<String> order) {
        this.order = order;
    }

    /** @param order a permutation of {@code tp}, {@code dp}, {@code pp}, fastest first, e.g. "tp,dp,pp" */
    public static RankLayout parse(String order) {
        List<String> o = Arrays.stream(order.split(",")).map(String::trim).toList();
        if (o.size() != 3 || !o.containsAll(List.of("tp", "dp", "pp"))) {
            throw new IllegalArgumentException("rank order '" + order + "' must be a permutation of tp,dp,pp");
        }
        return new RankLayout(o);
    }

    /** Coordinates of a rank. */
    public record Coord(int tp, int dp, int pp) {}

    public Coord coord(int rank, ParallelConfig c) {
        if (rank < 0 || rank >= c.worldSize()) {
            throw new IllegalArgumentException("rank " + rank + " out of range for world size " + c.worldSize());
        }
        int[] v = new int[3];
        int rest = rank;
        for (String dim : order) {
            int size = size(dim, c);
            v[index(dim)] = rest % size;
            rest /= size;
        }
        return new Coord(v[0], v[1], v[2]);
    }

    public int rank(Coord x, ParallelConfig c) {
        int rank = 0;
        int mult = 1;
        for (String dim : order) {
            int val = switch (dim) {
                case "tp" -> x.tp();
                case "dp" -> x.dp();
                default -> x.pp();
            };
            rank += val * mult;
            mult *= size(dim, c);
        }
        return rank;
    }

    private static int index(String dim) {
        return switch (dim) {
            case "tp" -> 0;
            case "dp" -> 1;
            default -> 2;
        };
    }

    private static int size(String dim, ParallelConfig c) {
        return switch (dim) {
            case "tp" -> c.tp();
            case "dp" -> c.dp();
            default -> c.pp();
        };
    }

    @Override
    public String toString() {
        return String.join(",", order);
    }
}
