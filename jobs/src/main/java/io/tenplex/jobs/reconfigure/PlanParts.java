package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Region;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.ShardPlan;
import io.tenplex.transform.ValueCopy;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/** Splits a plan into the part of each worker (peer to peer, or the two halves of central mode). */
final class PlanParts {
    private PlanParts() {
    }

    /** What every part of one plan shares. */
    record Header(String job, String planId, long step, Map<Integer, InetSocketAddress> daemons) {
        Map<Integer, String> addresses() {
            return PlanParts.addresses(daemons);
        }

        PlanPart part(int worker, String sourceDir, String outputDir, List<ShardPlan> shards, List<PlanPart.Value> values,
                List<PlanPart.Generated> generated, List<Device> sourceDevices) {
            return new PlanPart(job, planId, worker, step, addresses(), sourceDir, outputDir, shards, values, generated,
                    sourceDevices, Map.of(), List.of(), "", "", 0, List.of());
        }
    }

    /** Each worker's address as host:port, in worker order. */
    static Map<Integer, String> addresses(Map<Integer, InetSocketAddress> daemons) {
        Map<Integer, String> out = new TreeMap<>();
        daemons.forEach((w, a) -> out.put(w, a.getHostString() + ":" + a.getPort()));
        return out;
    }

    /** The shards of {@code worker}'s destination ranks, read from the old ranks under {@code sourceDir}. */
    static PlanPart peerToPeer(Header h, int worker, Plan plan, int sourceRanks, String sourceDir,
            Map<Integer, Map<String, String>> generated) {
        List<ShardPlan> shards = new ArrayList<>(plan.shardsOf(worker)); // built once, only this worker's
        Set<Integer> ranks = new HashSet<>();
        for (ShardPlan s : shards) {
            ranks.add(s.destRank());
        }
        List<PlanPart.Value> values = new ArrayList<>();
        for (ValueCopy v : plan.values()) {
            if (ranks.contains(v.destRank())) {
                values.add(new PlanPart.Value(v.destRank(), v.key(), v.sourceRank()));
            }
        }
        return h.part(worker, sourceDir, "", shards, values, generated(ranks, generated), sourceDevices(plan, sourceRanks));
    }

    /**
     * Central mode, first half: the central worker assembles every destination shard itself (kept
     * pieces become reads too) into {@code staging/<plan>/central}.
     */
    static PlanPart central(Header h, int central, Plan plan, int sourceRanks, String sourceDir) {
        List<ShardPlan> shards = plan.shards().stream().map(PlanParts::withoutKeeps).toList();
        List<PlanPart.Value> values = plan.values().stream()
                .map(v -> new PlanPart.Value(v.destRank(), v.key(), v.sourceRank())).toList();
        return h.part(central, sourceDir, "central", shards, values, List.of(), sourceDevices(plan, sourceRanks));
    }

    /**
     * Central mode, second half: a destination worker fetches each of its shards whole from the
     * central worker's {@code staging/<centralPlan>/central/<rank>/<key>}.
     */
    static PlanPart fromCentral(Header h, String centralPlan, int worker, int central, Plan plan,
            Map<Integer, Map<String, String>> generated) {
        Device holder = new Device(central, 0);
        int maxRank = plan.shards().isEmpty() ? 0 : plan.shards().get(plan.shards().size() - 1).destRank(); // rank order
        Set<Integer> ranks = new HashSet<>();
        List<ShardPlan> shards = new ArrayList<>();
        for (ShardPlan s : plan.shardsOf(worker)) {
            ranks.add(s.destRank());
            shards.add(whole(s, holder));
        }
        List<PlanPart.Value> values = new ArrayList<>();
        for (ValueCopy v : plan.values()) {
            if (ranks.contains(v.destRank())) {
                values.add(new PlanPart.Value(v.destRank(), v.key(), v.destRank()));
            }
        }
        List<Device> sources = new ArrayList<>();
        for (int r = 0; r <= maxRank; r++) {
            sources.add(holder);
        }
        return h.part(worker, "staging/" + centralPlan + "/central", "", shards, values, generated(ranks, generated),
                sources);
    }

    /** The shard read whole, as one remote piece, from the same rank and key on {@code holder}. */
    private static ShardPlan whole(ShardPlan s, Device holder) {
        long[] zero = new long[s.shape().rank()];
        Region all = Region.whole(s.shape());
        Piece p = new Piece(Piece.Kind.REMOTE, s.destRank(), holder, s.key(), all, Region.at(zero, s.shape().dims()), zero,
                s.byteSize(), new int[] {s.destRank()});
        return new ShardPlan(s.destRank(), s.destDevice(), s.tensor(), s.key(), s.shape(), s.dtype(), List.of(p), List.of());
    }

    private static ShardPlan withoutKeeps(ShardPlan s) {
        List<Piece> pieces = s.pieces().stream().map(p -> p.kind() != Piece.Kind.KEEP ? p : new Piece(Piece.Kind.REMOTE,
                p.sourceRank(), p.sourceDevice(), p.sourceKey(), p.source(), p.global(), p.destOffset(), p.bytes(),
                p.replicas())).toList();
        return new ShardPlan(s.destRank(), s.destDevice(), s.tensor(), s.key(), s.shape(), s.dtype(), pieces, s.padding());
    }

    private static List<PlanPart.Generated> generated(Set<Integer> ranks, Map<Integer, Map<String, String>> generated) {
        List<PlanPart.Generated> out = new ArrayList<>();
        generated.forEach((rank, files) -> {
            if (ranks.contains(rank)) {
                files.forEach((path, content) -> out.add(new PlanPart.Generated(rank, path, content)));
            }
        });
        return out;
    }

    private static List<Device> sourceDevices(Plan plan, int sourceRanks) {
        List<Device> out = new ArrayList<>();
        for (int r = 0; r < sourceRanks; r++) {
            out.add(plan.sourceDevice(r));
        }
        return out;
    }
}
