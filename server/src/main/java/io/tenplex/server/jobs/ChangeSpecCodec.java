package io.tenplex.server.jobs;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.Limits;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.server.control.DeviceRun;
import io.tenplex.server.control.Placement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A {@link ChangeSpec} as the protobuf message daemons exchange, and back. Decoding checks every
 * number that sizes memory before anything is allocated (world sizes, device runs, copies), so a
 * forged message is refused with the value and the limit named, never allocated for.
 */
public final class ChangeSpecCodec {
    /** The longest address, job name, change id, directory or coordinator taken from a message (characters). */
    static final int MAX_TEXT = 300;

    private ChangeSpecCodec() {
    }

    public static io.tenplex.server.control.ChangeSpec encode(ChangeSpec c) {
        var b = io.tenplex.server.control.ChangeSpec.newBuilder().setJob(c.job()).setChangeId(c.changeId())
                .setStep(c.step()).setModelDigest(c.modelDigest()).setFrom(placement(c.from())).setTo(placement(c.to()))
                .setSourceDir(c.sourceDir()).setLinkRate(c.linkRate())
                .addAllParticipants(c.participants()).setCoordinator(c.coordinator())
                .setPreparedTimeoutMillis(c.preparedTimeoutMillis()).addAllLayoutDigests(c.layoutDigests())
                .addAllRebuilding(c.rebuilding());
        if (c.daemonsDigest().isEmpty()) {
            b.putAllDaemons(c.daemons());
        } else {
            b.setDaemonsDigest(c.daemonsDigest());
        }
        RankLayouts.encode(c.rankLayouts(), b);
        CopyRuns.encode(new TreeMap<>(c.copies()), b);
        return b.build();
    }

    private static Placement placement(ConfigJson.Placed p) {
        ParallelConfig c = p.config();
        Placement.Builder b = Placement.newBuilder().setTp(c.tp()).setPp(c.pp()).setDp(c.dp()).setEp(c.ep())
                .setSequenceParallel(c.sequenceParallel());
        List<Device> ds = p.devices();
        int i = 0;
        while (i < ds.size()) {
            int j = i + 1;
            while (j < ds.size() && ds.get(j).worker() == ds.get(i).worker()
                    && ds.get(j).local() == ds.get(i).local() + (j - i)) {
                j++;
            }
            int count = j - i;
            int workers = 1;
            while (j + count <= ds.size() && sameRunOn(ds, i, j, count)) { // the next worker, its devices alike
                j += count;
                workers++;
            }
            DeviceRun.Builder run = DeviceRun.newBuilder().setWorker(ds.get(i).worker()).setFirstLocal(ds.get(i).local())
                    .setCount(count);
            b.addDevices(workers > 1 ? run.setWorkers(workers) : run);
            i = j;
        }
        return b.build();
    }

    /** Whether devices {@code at .. at + count - 1} are those of {@code first}'s run on the worker after {@code at - 1}'s. */
    private static boolean sameRunOn(List<Device> ds, int first, int at, int count) {
        for (int k = 0; k < count; k++) {
            if (ds.get(at + k).worker() != ds.get(at - 1).worker() + 1 || ds.get(at + k).local() != ds.get(first).local() + k) {
                return false;
            }
        }
        return true;
    }

    /**
     * The change a message describes, checked first.
     *
     * @throws IllegalArgumentException naming the value and the limit
     */
    public static ChangeSpec decode(io.tenplex.server.control.ChangeSpec m) {
        if (m.getUnknownFields().hasField(8)) { // copies as a map: a coordinator of another version
            throw new IllegalArgumentException("the definition lists partner copies in a form this daemon no longer "
                    + "reads (field 8): the coordinator runs another version of tenplexd");
        }
        text(m.getJob(), "job", false);
        segment(text(m.getChangeId(), "change id", false), "change id");
        text(m.getSourceDir(), "source dir", true);
        if (!m.getSourceDir().isEmpty()) {
            for (String s : m.getSourceDir().split("/", -1)) {
                segment(s, "source dir");
            }
        }
        text(m.getCoordinator(), "coordinator", true);
        digest(m.getModelDigest(), "model digest");
        if (m.getStep() < 0 || m.getLinkRate() < 0) {
            throw new IllegalArgumentException("step and link rate must not be negative");
        }
        if (m.getPreparedTimeoutMillis() < 0 || m.getPreparedTimeoutMillis() > Limits.MAX_PREPARED_TIMEOUT_MILLIS) {
            throw new IllegalArgumentException("prepared timeout must be in [0, " + Limits.MAX_PREPARED_TIMEOUT_MILLIS
                    + "] ms");
        }
        ConfigJson.Placed from = placed(m.getFrom(), "from");
        ConfigJson.Placed to = placed(m.getTo(), "to");
        Map<Integer, String> daemons = daemons(m);
        if (m.getParticipantsCount() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException(m.getParticipantsCount() + " participants, over the limit of "
                    + Limits.MAX_RANKS);
        }
        java.util.Set<Integer> destinations = new java.util.HashSet<>();
        to.devices().forEach(d -> destinations.add(d.worker()));
        for (int w : m.getParticipantsList()) {
            if (!destinations.contains(w)) {
                throw new IllegalArgumentException("participant " + w + " is not a worker of the new placement");
            }
        }
        List<Integer> rankLayouts = RankLayouts.decode(m, from.devices().size());
        return new ChangeSpec(m.getJob(), m.getChangeId(), m.getStep(), m.getModelDigest(), from, to, daemons,
                CopyRuns.decode(m, from.devices().size()), m.getSourceDir(), m.getLinkRate(), m.getParticipantsList(),
                m.getCoordinator(), m.getPreparedTimeoutMillis(), m.getLayoutDigestsList(), rankLayouts,
                rebuilding(m, from.devices().size()), m.getDaemonsDigest());
    }

    /** The workers' addresses given in the definition (none when given by digest). */
    private static Map<Integer, String> daemons(io.tenplex.server.control.ChangeSpec m) {
        Map<Integer, String> daemons = new TreeMap<>();
        if (m.getDaemonsCount() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException(m.getDaemonsCount() + " daemons, over the limit of " + Limits.MAX_RANKS);
        }
        if (!m.getDaemonsDigest().isEmpty()) {
            digest(m.getDaemonsDigest(), "daemons digest");
            if (m.getDaemonsCount() > 0) {
                throw new IllegalArgumentException("the workers' addresses are given both by digest and in the definition");
            }
        }
        m.getDaemonsMap().forEach((w, a) -> {
            worker(w, "daemon");
            daemons.put(w, text(a, "address of worker " + w, false));
        });
        return daemons;
    }

    /** Distinct old ranks. */
    private static List<Integer> rebuilding(io.tenplex.server.control.ChangeSpec m, int oldRanks) {
        if (m.getRebuildingCount() > oldRanks) {
            throw new IllegalArgumentException("rebuilding: " + m.getRebuildingCount() + " ranks of " + oldRanks);
        }
        java.util.Set<Integer> seen = new java.util.HashSet<>();
        for (int r : m.getRebuildingList()) {
            if (r < 0 || r >= oldRanks || !seen.add(r)) {
                throw new IllegalArgumentException("rebuilding: rank " + r + " is not an old rank, or is listed twice");
            }
        }
        return m.getRebuildingList();
    }

    static void digest(String d, String what) {
        if (!d.matches("[0-9a-f]{64}")) {
            throw new IllegalArgumentException(what + " must be 64 lowercase hex digits");
        }
    }

    private static ConfigJson.Placed placed(Placement p, String which) {
        String where = "\"" + which + "\": ";
        long world = (long) p.getTp() * p.getPp() * p.getDp();
        if (p.getTp() < 1 || p.getPp() < 1 || p.getDp() < 1 || p.getEp() < 1 || world > Limits.MAX_RANKS) {
            throw new IllegalArgumentException(where + "(T,P,D,E) = (" + p.getTp() + "," + p.getPp() + "," + p.getDp()
                    + "," + p.getEp() + ") must be at least 1 each, with at most " + Limits.MAX_RANKS + " ranks");
        }
        ParallelConfig config = new ParallelConfig(p.getTp(), p.getPp(), p.getDp(), p.getEp(), p.getSequenceParallel());
        long placed = 0;
        for (DeviceRun r : p.getDevicesList()) {
            int workers = Math.max(1, r.getWorkers());
            placed += (long) r.getCount() * workers;
            if (r.getCount() < 1 || r.getWorkers() < 0 || placed > world || r.getWorker() < 0
                    || (long) r.getWorker() + workers > Limits.MAX_WORKER || r.getFirstLocal() < 0
                    || (long) r.getFirstLocal() + r.getCount() > Limits.MAX_WORKER) {
                throw new IllegalArgumentException(where + "device run (worker " + r.getWorker() + ", local "
                        + r.getFirstLocal() + ", count " + r.getCount() + ", workers " + r.getWorkers()
                        + ") is out of range or places more than its " + world + " ranks");
            }
        }
        if (placed != world) {
            throw new IllegalArgumentException(where + "devices place " + placed + " ranks of " + world);
        }
        List<Device> devices = new ArrayList<>((int) world);
        for (DeviceRun r : p.getDevicesList()) {
            for (int w = 0; w < Math.max(1, r.getWorkers()); w++) {
                for (int i = 0; i < r.getCount(); i++) {
                    devices.add(new Device(r.getWorker() + w, r.getFirstLocal() + i));
                }
            }
        }
        if (devices.stream().distinct().count() != world) {
            throw new IllegalArgumentException(where + "two ranks are placed on one device");
        }
        return new ConfigJson.Placed(config, devices);
    }

    /** One path component of a relative store path: no '/', not '.' or '..', not empty. */
    private static void segment(String s, String what) {
        String problem = io.tenplex.store.JobNamespace.nameProblem(s);
        if (problem != null) {
            throw new IllegalArgumentException(what + " must be a relative path of plain names: " + problem);
        }
    }

    static void worker(int w, String what) {
        if (w < 0 || w >= Limits.MAX_WORKER) {
            throw new IllegalArgumentException(what + ": worker " + w + " is not in [0, " + (Limits.MAX_WORKER - 1) + "]");
        }
    }

    private static String text(String s, String what, boolean emptyOk) {
        if (s.length() > MAX_TEXT || (!emptyOk && s.isEmpty())) {
            throw new IllegalArgumentException(what + " must be " + (emptyOk ? "" : "non-empty and ") + "at most " + MAX_TEXT
                    + " characters");
        }
        return s;
    }
}
