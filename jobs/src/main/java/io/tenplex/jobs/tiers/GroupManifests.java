package io.tenplex.jobs.tiers;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.store.StorePath;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The seal manifests of a group's members, by worker and in rank order: what the encoder and the
 * rebuild derive the members' {@link BlockLayout}s from. Kept as JSON next to the parity blocks.
 */
record GroupManifests(Map<Integer, List<SealManifest>> byWorker) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Asks every member's daemon for the manifests of the ranks it sealed. */
    static GroupManifests ask(List<Integer> members, Map<Integer, InetSocketAddress> daemons, JobLayout paths, long step,
            SegmentReads io, DaemonClient client) throws IOException, InterruptedException {
        Map<Integer, List<SealManifest>> out = new TreeMap<>();
        StorePath dir = paths.generation(step).child("manifests");
        for (int w : members) {
            InetSocketAddress a = daemons.get(w);
            if (a == null) {
                throw new IOException("no daemon address for worker " + w);
            }
            TreeMap<Integer, SealManifest> ranks = new TreeMap<>();
            for (DaemonClient.TreeEntry e : io.await(client.listTree(a, dir), dir)) {
                String name = e.path().substring(e.path().lastIndexOf('/') + 1);
                if (name.endsWith(".json") && name.length() > 5 && name.substring(0, name.length() - 5).chars()
                        .allMatch(Character::isDigit)) {
                    int rank = Integer.parseInt(name.substring(0, name.length() - 5));
                    byte[] m = io.await(client.readValue(a, paths.sealManifest(step, rank)), dir).bytes();
                    ranks.put(rank, JSON.readValue(m, SealManifest.class));
                }
            }
            out.put(w, new ArrayList<>(ranks.values()));
        }
        return new GroupManifests(out);
    }

    static GroupManifests parse(byte[] json) throws IOException {
        Map<Integer, List<SealManifest>> m = JSON.readValue(json,
                JSON.getTypeFactory().constructMapType(TreeMap.class, JSON.getTypeFactory().constructType(Integer.class),
                        JSON.getTypeFactory().constructCollectionType(List.class, SealManifest.class)));
        return new GroupManifests(m);
    }

    byte[] json() throws IOException {
        return JSON.writeValueAsBytes(byWorker);
    }

    List<Integer> members() {
        return new ArrayList<>(byWorker.keySet());
    }

    BlockLayout layout(int worker) {
        return BlockLayout.of(byWorker.get(worker));
    }

    /** The longest member block: the length of every parity block. */
    long length() {
        return byWorker.keySet().stream().mapToLong(w -> layout(w).length()).max().orElse(0);
    }
}
