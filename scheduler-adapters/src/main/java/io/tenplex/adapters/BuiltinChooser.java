package io.tenplex.adapters;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import java.util.ArrayList;
import java.util.List;

/**
 * The built-in parallelizer. Its cost model (docs/SCHEDULING.md):
 * <ol>
 *   <li>Candidates are every (T, P, D) with T·P·D = devices, T dividing the devices per worker (a
 *       tensor-parallel group never spans workers: its all-reduces are on the critical path).</li>
 *   <li>A candidate must be valid for the model: every split tensor divides into T equal parts of
 *       whole granules (so T divides the attention heads or query groups) and P divides the layers.
 *       This is checked by building the configuration's PTC.</li>
 *   <li>Memory: the largest per-device state (the sum of the device's shard bytes, from the PTC)
 *       must fit {@code memoryPerDevice} when one is given.</li>
 *   <li>Among the rest: the largest D (data parallelism needs the least communication per step and
 *       no pipeline bubbles), then the smallest P (fewer bubbles), then the smallest T.</li>
 * </ol>
 */
public final class BuiltinChooser implements Parallelizer {
    /** One candidate and why it was rejected (null when it fits), for error messages and docs. */
    public record Candidate(ParallelConfig config, long bytesPerDevice, String rejected) {}

    @Override
    public ParallelConfig choose(Request r) {
        List<Candidate> all = candidates(r);
        Candidate best = null;
        for (Candidate c : all) {
            if (c.rejected() == null && (best == null || better(c.config(), best.config()))) {
                best = c;
            }
        }
        if (best == null) {
            StringBuilder why = new StringBuilder("no parallel configuration fits " + r.devices() + " devices:");
            all.forEach(c -> why.append(' ').append(c.config()).append(": ").append(c.rejected()).append(';'));
            throw new IllegalArgumentException(why.substring(0, why.length() - 1));
        }
        return best.config();
    }

    private static boolean better(ParallelConfig a, ParallelConfig b) {
        if (a.dp() != b.dp()) {
            return a.dp() > b.dp();
        }
        if (a.pp() != b.pp()) {
            return a.pp() < b.pp();
        }
        return a.tp() < b.tp();
    }

    /** Every candidate for the request, each with its per-device bytes and the reason it was rejected. */
    public static List<Candidate> candidates(Request r) {
        List<Candidate> out = new ArrayList<>();
        int n = r.devices();
        for (int tp = 1; tp <= n; tp++) {
            if (n % tp != 0) {
                continue;
            }
            for (int pp = 1; pp <= n / tp; pp++) {
                if ((n / tp) % pp != 0) {
                    continue;
                }
                ParallelConfig c = ParallelConfig.of(tp, pp, n / tp / pp);
                if (r.devicesPerWorker() % tp != 0) {
                    out.add(new Candidate(c, 0, "T=" + tp + " does not divide the " + r.devicesPerWorker()
                            + " devices of a worker"));
                    continue;
                }
                if (r.model() == null) {
                    out.add(new Candidate(c, 0, null));
                    continue;
                }
                Ptc ptc;
                try {
                    List<Device> devices = Ptc.packedDevices(n, r.devicesPerWorker());
                    // the model as this pipeline stores it (Megatron's tied head on the last stage when P > 1)
                    io.tenplex.ptc.Model m = io.tenplex.ptc.MegatronLayout.forStages(r.model(), pp);
                    ptc = new Ptc(m, c, RankLayout.MEGATRON, StageMap.uniform(m.layers(), pp), devices);
                } catch (IllegalArgumentException e) {
                    out.add(new Candidate(c, 0, e.getMessage()));
                    continue;
                }
                long most = 0;
                for (int rank = 0; rank < n; rank++) {
                    most = Math.max(most, ptc.shards(rank).stream().mapToLong(Ptc.Shard::bytes).sum());
                }
                String rejected = r.memoryPerDevice() > 0 && most > r.memoryPerDevice() ? most
                        + " bytes of state per device exceed the " + r.memoryPerDevice() + " bytes per device" : null;
                out.add(new Candidate(c, most, rejected));
            }
        }
        return out;
    }

    @Override
    public String name() {
        return "builtin";
    }
}
