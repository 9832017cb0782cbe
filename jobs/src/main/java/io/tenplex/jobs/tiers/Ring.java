package io.tenplex.jobs.tiers;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeSet;

/**
 * The workers of a job in worker-number order, wrapping: worker {@code w}'s partners are the next
 * {@code n} workers after it. A value: the arithmetic only, tested as data.
 */
public record Ring(List<Integer> workers) {
    public Ring {
        workers = List.copyOf(new TreeSet<>(workers));
    }

    /**
     * The ring of the workers that hold a generation's ranks, from the configuration it was saved
     * with ({@code devices}, or {@code devicesPerWorker} with {@code firstWorker}); {@code fallback}
     * (the cluster's workers) when the configuration names no devices.
     */
    public static Ring of(JsonNode config, int world, Collection<Integer> fallback) {
        List<Integer> rankWorkers = rankWorkers(config, world);
        return new Ring(rankWorkers.isEmpty() ? new ArrayList<>(fallback) : rankWorkers);
    }

    /** The worker of every rank as a configuration places them, or empty when it does not say. */
    static List<Integer> rankWorkers(JsonNode config, int world) {
        if (config == null || world < 1) {
            return List.of();
        }
        List<Integer> out = new ArrayList<>();
        if (config.path("devices").isArray() && config.get("devices").size() == world) {
            config.get("devices").forEach(d -> out.add(d.path(0).asInt()));
            return out;
        }
        int perWorker = config.path("devicesPerWorker").asInt(0);
        if (perWorker < 1) {
            return List.of();
        }
        int first = config.path("firstWorker").asInt(0);
        for (Device d : Ptc.packedDevices(world, perWorker)) {
            out.add(d.worker() + first);
        }
        return out;
    }

    /** The next {@code n} workers after {@code worker} (fewer when the ring is smaller), nearest first. */
    public List<Integer> partners(int worker, int n) {
        return around(worker, n, 1);
    }

    /** The workers whose partners include {@code worker}: the {@code n} before it, nearest first. */
    public List<Integer> holdersFor(int worker, int n) {
        return around(worker, n, -1);
    }

    /** Every other worker after {@code worker}, nearest first (where a lost worker's copies are looked for). */
    public List<Integer> after(int worker) {
        return around(worker, workers.size(), 1);
    }

    /** L3: the ring cut into runs of {@code k} consecutive workers (the last run may be shorter). */
    public List<List<Integer>> groups(int k) {
        List<List<Integer>> out = new ArrayList<>();
        for (int at = 0; at < workers.size(); at += k) {
            out.add(workers.subList(at, Math.min(at + k, workers.size())));
        }
        return out;
    }

    /**
     * Where the {@code m} parity blocks of {@code group} are kept: the {@code m} workers after its last
     * one; empty when the ring is too small to keep them outside the group.
     */
    public List<Integer> parityHolders(List<Integer> group, int m) {
        List<Integer> next = around(group.get(group.size() - 1), m, 1);
        return next.size() < m || next.stream().anyMatch(group::contains) ? List.of() : next;
    }

    private List<Integer> around(int worker, int n, int direction) {
        int at = workers.indexOf(worker);
        if (at < 0) {
            return List.of();
        }
        List<Integer> out = new ArrayList<>();
        int size = workers.size();
        for (int i = 1; i <= Math.min(n, size - 1); i++) {
            out.add(workers.get(Math.floorMod(at + direction * i, size)));
        }
        return out;
    }
}
