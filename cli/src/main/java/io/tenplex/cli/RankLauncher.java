package io.tenplex.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Starts {@code tenplex run}'s rank processes with their environment (as torchrun: {@code RANK},
 * {@code WORLD_SIZE}, {@code MASTER_ADDR}/{@code PORT}, plus {@code TENPLEX_*}). With the run's
 * rendezvous store every rank is a client of it ({@code TORCHELASTIC_USE_AGENT_STORE}); in live mode
 * the ranks also learn the prefix of their group and the number of the next reconfiguration.
 */
final class RankLauncher {
    /** How long a rank started ahead of a change waits for its role (the segment's training time). */
    private static final long AHEAD_WAIT_SECONDS = 30L * 24 * 3600;

    private final RunCli run;
    /** Launches so far (each gets its own rendezvous prefix). */
    int launches;
    /** The process group prefix of the latest launch of every rank or handover, and its world size. */
    String prefix;
    int prefixWorld;
    /** Non-zero while starting added ranks ahead of reconfiguration {@code waitFor} (live mode). */
    int waitFor;

    RankLauncher(RunCli run) {
        this.run = run;
    }

    /**
     * Starts the processes of ranks {@code from} and above of {@code c}; with the run's store they meet
     * in it under {@code groupPrefix} (live mode), or under torch's {@code /worker/attempt_<launch>}.
     */
    void launch(ParallelConfig c, List<Device> devices, int segment, int from, String groupPrefix) throws IOException {
        launches++;
        if (from == 0) {
            prefix = groupPrefix;
            prefixWorld = c.worldSize();
        }
        int port = port();
        ObjectNode cfg = ParallelConfigJson.placement(c, devices);
        Prestarted ready = run.prestarted != null && run.prestarted.segment() == segment ? run.prestarted : null;
        List<Integer> went = new ArrayList<>();
        for (int rank = from; rank < c.worldSize(); rank++) {
            if (run.running.has(rank)) {
                continue; // started ahead of the commit
            }
            ProcessBuilder pb = rankProcess(c, devices.get(rank), cfg, segment, rank, port, groupPrefix);
            Process p = ready != null ? ready.go(rank, pb.environment()) : null;
            if (p != null) {
                run.running.add(rank, p);
                went.add(rank);
            } else {
                run.running.start(rank, pb);
            }
        }
        if (ready != null) {
            if (!went.isEmpty()) {
                ready.note("pre-started interpreter(s) take " + (went.size() == 1 ? "rank " + went.get(0) : "ranks "
                        + went.get(0) + "-" + went.get(went.size() - 1)) + " (started when the change was posted)");
            }
            ready.close(); // those not needed (a smaller world) exit
        }
    }

    /** Rank {@code rank}'s process as the launcher starts it: the command with the rank's environment. */
    private ProcessBuilder rankProcess(ParallelConfig c, Device device, ObjectNode cfg, int segment, int rank,
            int port, String groupPrefix) {
        ProcessBuilder pb = new ProcessBuilder(run.command).inheritIO();
        Map<String, String> env = pb.environment();
        if (run.store != null) {
            env.put("TORCHELASTIC_USE_AGENT_STORE", "True"); // every rank a client of the run's store
            env.put("TORCHELASTIC_RESTART_COUNT", Integer.toString(launches)); // a fresh key prefix per launch
        }
        if (run.live) {
            live(env, groupPrefix);
        }
        env.put("RANK", Integer.toString(rank));
        env.put("LOCAL_RANK", Integer.toString(device.local()));
        env.put("WORLD_SIZE", Integer.toString(c.worldSize()));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(c.worldSize()));
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(port));
        daemon(env);
        env.put("TENPLEX_TP", Integer.toString(c.tp()));
        env.put("TENPLEX_PP", Integer.toString(c.pp()));
        env.put("TENPLEX_DP", Integer.toString(c.dp()));
        env.put("TENPLEX_CONFIG", cfg.toString());
        env.put("TENPLEX_SEGMENT", Integer.toString(segment));
        env.put("TENPLEX_SPAWN_TIME", String.format(java.util.Locale.ROOT, "%.6f", System.currentTimeMillis() / 1e3));
        // a rank that calls tenplex.elastic or should_stop exits when this launcher is gone (SIGKILLed: it cannot end them)
        env.put("TENPLEX_LAUNCHER_PID", Long.toString(ProcessHandle.current().pid()));
        RankMemoryTunables.apply(env);
        return pb;
    }

    private void live(Map<String, String> env, String groupPrefix) {
        env.put("TENPLEX_LIVE", "1");
        env.put("TENPLEX_LIVE_NEXT", Integer.toString(waitFor > 0 ? waitFor : run.posted + 1));
        if (waitFor > 0) {
            env.put("TENPLEX_LIVE_WAIT", "1"); // no group yet: the role comes with the commit
        }
        env.put("TENPLEX_LIVE_PREFIX", groupPrefix);
        env.put("TENPLEX_LIVE_SECRET", run.roles.secret()); // the ranks act only on roles signed with it
        env.put("TENPLEX_REGROUP_TIMEOUT", Long.toString(run.regroupTimeout));
        // a rank started ahead waits for the whole segment; the store's end (the run's) ends its wait
        env.put("TENPLEX_LIVE_TIMEOUT", Long.toString(waitFor > 0 ? AHEAD_WAIT_SECONDS : run.saveTimeout + 300));
    }

    private int port() throws IOException {
        if (run.store != null) {
            return run.store.port();
        }
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private void daemon(Map<String, String> env) {
        env.put("TENPLEX_ADDR", run.t.base());
        env.put("TENPLEX_JOB", run.job);
        if (run.t.token() != null) {
            env.put("TENPLEX_TOKEN", run.t.token());
        }
        if (run.t.tlsCa() != null) {
            env.put("TENPLEX_CA", run.t.tlsCa().toAbsolutePath().toString());
        }
    }
}
