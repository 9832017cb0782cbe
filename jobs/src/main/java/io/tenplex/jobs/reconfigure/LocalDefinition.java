package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.Ptc;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * A coordinated change's definition for every daemon to plan its own part of, and the descriptions it
 * names: the stored model, each distinct saved layout of the old ranks once (ranks that saved the
 * same tree share one layout, so a few layouts serve thousands of ranks), and the workers' addresses
 * (the same for every change of a job on the same workers).
 *
 * @param descriptions every description the definition names, by digest
 */
public record LocalDefinition(ChangeSpec spec, Map<String, byte[]> descriptions) {

    /**
     * A change's definition as far as it is known ahead of the change (plan ahead): the model and
     * addresses by digest, both placements, the new placement's workers as participants; no saved
     * layouts, step, source or coordinator. Enough for each daemon to plan its own part ahead
     * ({@link OwnPartsAhead}); never started.
     */
    public static ChangeSpec ahead(String job, Model model, Ptc from, Ptc to,
            Map<Integer, java.net.InetSocketAddress> daemons) {
        List<Integer> participants = to.devices().stream().map(io.tenplex.ptc.Device::worker).distinct().sorted().toList();
        return new ChangeSpec(job, "ahead", 0, Descriptions.digest(Descriptions.model(model)),
                new ConfigJson.Placed(from.config(), from.devices()), new ConfigJson.Placed(to.config(), to.devices()),
                Map.of(), Map.of(), "", 0, participants, "", 0, List.of(), java.util.Collections.nCopies(from.worldSize(),
                        -1), List.of(), Descriptions.digest(Descriptions.addresses(PlanParts.addresses(daemons))));
    }

    static LocalDefinition of(Reconfiguration r, Map<Integer, CheckpointLayout> sources) {
        Map<String, byte[]> descriptions = new HashMap<>();
        List<String> digests = new ArrayList<>();
        List<Integer> byRank = new ArrayList<>();
        Map<CheckpointLayout, Integer> index = new IdentityHashMap<>();
        for (int rank = 0; rank < r.from().worldSize(); rank++) {
            CheckpointLayout l = sources.get(rank);
            if (l == null) {
                byRank.add(-1);
                continue;
            }
            byRank.add(index.computeIfAbsent(l, x -> {
                byte[] b = Descriptions.layout(x);
                String d = Descriptions.digest(b);
                if (descriptions.put(d, b) == null) {
                    digests.add(d);
                }
                return digests.indexOf(d);
            }));
        }
        byte[] model = Descriptions.model(r.local().stored());
        String modelDigest = Descriptions.digest(model);
        descriptions.put(modelDigest, model);
        ChangeSpec inline = r.spec(modelDigest, digests, byRank, "");
        byte[] addresses = Descriptions.addresses(inline.daemons());
        String addressesDigest = Descriptions.digest(addresses);
        descriptions.put(addressesDigest, addresses);
        return new LocalDefinition(r.spec(modelDigest, digests, byRank, addressesDigest), descriptions);
    }
}
