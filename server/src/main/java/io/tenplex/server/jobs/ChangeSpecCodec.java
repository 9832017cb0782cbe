package io.tenplex.server.jobs;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.Limits;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.server.control.DeviceRun;
import io.tenplex.server.control.Placement;
import io.tenplex.server.control.CopyRun;
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
                .putAllDaemons(c.daemons()).setSourceDir(c.sourceDir()).setLinkRate(c.linkRate())
                .addAllParticipants(c.participants()).setCoordinator(c.coordinator())
                .setPreparedTimeoutMillis(c.preparedTimeoutMillis()).addAllLayoutDigests(c.layoutDigests())
                .addAllRankLayouts(c.rankLayouts()).addAllRebuilding(c.rebuilding());
        copyRuns(new TreeMap<>(c.copies()), b);
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
            b.addDevices(DeviceRun.newBuilder().setWorker(ds.get(i).worker()).setFirstLocal(ds.get(i).local())
                    .setCount(j - i));
            i = j;
        }
        return b.build();
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
        Map<Integer, String> daemons = new TreeMap<>();
        if (m.getDaemonsCount() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException(m.getDaemonsCount() + " daemons, over the limit of " + Limits.MAX_RANKS);
        }
        m.getDaemonsMap().forEach((w, a) -> {
            worker(w, "daemon");
            daemons.put(w, text(a, "address of worker " + w, false));
        });
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
        layouts(m, from.devices().size());
        return new ChangeSpec(m.getJob(), m.getChangeId(), m.getStep(), m.getModelDigest(), from, to, daemons,
                copies(m, from.devices().size()), m.getSourceDir(), m.getLinkRate(), m.getParticipantsList(),
                m.getCoordinator(), m.getPreparedTimeoutMillis(), m.getLayoutDigestsList(), m.getRankLayoutsList(),
                rebuilding(m, from.devices().size()));
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

    /** A layout per old rank (or none), each naming one of at most as many distinct layouts as ranks. */
    private static void layouts(io.tenplex.server.control.ChangeSpec m, int oldRanks) {
        if (m.getRankLayoutsCount() != oldRanks || m.getLayoutDigestsCount() > oldRanks) {
            throw new IllegalArgumentException("layouts: " + m.getRankLayoutsCount() + " ranks' layouts and "
                    + m.getLayoutDigestsCount() + " distinct ones for " + oldRanks + " old ranks");
        }
        m.getLayoutDigestsList().forEach(d -> digest(d, "layout digest"));
        if (new java.util.HashSet<>(m.getLayoutDigestsList()).size() != m.getLayoutDigestsCount()) {
            throw new IllegalArgumentException("layouts: a layout digest is listed twice");
        }
        for (int i : m.getRankLayoutsList()) {
            if (i < -1 || i >= m.getLayoutDigestsCount()) {
                throw new IllegalArgumentException("layouts: index " + i + " names none of the "
                        + m.getLayoutDigestsCount() + " layouts");
            }
        }
    }

    private static void digest(String d, String what) {
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
            placed += r.getCount();
            if (r.getCount() < 1 || placed > world || r.getWorker() < 0 || r.getWorker() >= Limits.MAX_WORKER
                    || r.getFirstLocal() < 0 || (long) r.getFirstLocal() + r.getCount() > Limits.MAX_WORKER) {
                throw new IllegalArgumentException(where + "device run (worker " + r.getWorker() + ", local "
                        + r.getFirstLocal() + ", count " + r.getCount() + ") is out of range or places more than its "
                        + world + " ranks");
            }
        }
        if (placed != world) {
            throw new IllegalArgumentException(where + "devices place " + placed + " ranks of " + world);
        }
        List<Device> devices = new ArrayList<>((int) world);
        for (DeviceRun r : p.getDevicesList()) {
            for (int i = 0; i < r.getCount(); i++) {
                devices.add(new Device(r.getWorker(), r.getFirstLocal() + i));
            }
        }
        if (devices.stream().distinct().count() != world) {
            throw new IllegalArgumentException(where + "two ranks are placed on one device");
        }
        return new ConfigJson.Placed(config, devices);
    }

    /** Consecutive ranks copied on the same workers, as one run each. */
    private static void copyRuns(TreeMap<Integer, List<Integer>> copies, io.tenplex.server.control.ChangeSpec.Builder b) {
        CopyRun.Builder run = null;
        int next = -1;
        for (var e : copies.entrySet()) {
            if (run != null && e.getKey() == next && run.getWorkersList().equals(e.getValue())) {
                run.setCount(run.getCount() + 1);
            } else {
                if (run != null) {
                    b.addCopies(run);
                }
                run = CopyRun.newBuilder().setFirstRank(e.getKey()).setCount(1).addAllWorkers(e.getValue());
            }
            next = e.getKey() + 1;
        }
        if (run != null) {
            b.addCopies(run);
        }
    }

    /** The runs of copies, checked: old ranks in increasing order, at most four copies a rank in all. */
    private static Map<Integer, List<Integer>> copies(io.tenplex.server.control.ChangeSpec m, int oldRanks) {
        long entries = 0;
        long end = 0;
        Map<Integer, List<Integer>> out = new TreeMap<>();
        for (CopyRun r : m.getCopiesList()) {
            long first = r.getFirstRank();
            entries += (long) r.getCount() * r.getWorkersCount();
            if (first < end || r.getCount() < 1 || first + r.getCount() > oldRanks || entries > 4L * oldRanks) {
                throw new IllegalArgumentException("copies: ranks " + first + " to " + (first + r.getCount() - 1)
                        + " are not old ranks after the previous run's, or more than " + 4 * oldRanks
                        + " copies are listed");
            }
            r.getWorkersList().forEach(w -> worker(w, "copy of rank " + first));
            List<Integer> ws = List.copyOf(r.getWorkersList());
            for (int rank = (int) first; rank < first + r.getCount(); rank++) {
                out.put(rank, ws);
            }
            end = first + r.getCount();
        }
        return out;
    }

    /** One path component of a relative store path: no '/', not '.' or '..', not empty. */
    private static void segment(String s, String what) {
        String problem = io.tenplex.store.JobNamespace.nameProblem(s);
        if (problem != null) {
            throw new IllegalArgumentException(what + " must be a relative path of plain names: " + problem);
        }
    }

    private static void worker(int w, String what) {
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
