package io.tenplex.examples;

import io.tenplex.client.NoCheckpoint;
import io.tenplex.client.TenplexClient;
import io.tenplex.client.Tensor;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Locale;
import java.util.Map;

/**
 * A training loop with tenplex-client alone (no ND4J): it loads its rank's newest state from
 * tenplexd, or starts fresh when there is none ({@link NoCheckpoint}), takes toy gradient steps on a
 * small weight vector, saves every few steps and when the daemon's stop flag is up, and exits when it
 * is. Run it twice and the second run resumes where the first stopped.
 *
 * <pre>
 * java -jar examples/java/target/tenplex-client-example.jar [STEPS [SAVE_EVERY]]
 * </pre>
 * Configuration as the Python client's: {@code TENPLEX_ADDR}, {@code TENPLEX_TOKEN_FILE} or
 * {@code TENPLEX_TOKEN}, {@code TENPLEX_CA}, {@code TENPLEX_JOB} (default {@code java-example}),
 * {@code RANK} (0) and {@code WORLD_SIZE} (1).
 */
public final class ResumableTraining {
    private ResumableTraining() {
    }

    static final String USAGE = "usage: java -jar tenplex-client-example.jar [STEPS [SAVE_EVERY]]\n"
            + "  trains TENPLEX_JOB's rank RANK (of WORLD_SIZE) against TENPLEX_ADDR up to step STEPS (default 20),\n"
            + "  saving every SAVE_EVERY steps (default 5) and when the daemon's stop flag is up";

    public static void main(String[] args) {
        if (args.length > 0 && (args[0].equals("--help") || args[0].equals("-h"))) {
            System.out.println(USAGE);
            return;
        }
        int steps;
        int saveEvery;
        try {
            steps = args.length > 0 ? Integer.parseInt(args[0]) : 20;
            saveEvery = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        } catch (NumberFormatException e) {
            System.err.println("tenplex-client-example: expected whole numbers, got " + String.join(" ", args) + "\n"
                    + USAGE);
            System.exit(2);
            return;
        }
        if (args.length > 2 || steps < 0 || saveEvery < 1) {
            System.err.println("tenplex-client-example: STEPS must be >= 0 and SAVE_EVERY >= 1, at most two arguments\n"
                    + USAGE);
            System.exit(2);
        }
        Map<String, String> env = System.getenv();
        String job = env.getOrDefault("TENPLEX_JOB", "java-example");
        int rank = Integer.parseInt(env.getOrDefault("RANK", "0"));
        int world = Integer.parseInt(env.getOrDefault("WORLD_SIZE", "1"));
        run(TenplexClient.fromEnvironment(), job, rank, world, steps, saveEvery, System.out);
    }

    /** Trains {@code job}'s rank up to step {@code steps}; returns the last step taken. */
    public static long run(TenplexClient c, String job, int rank, int world, long steps, int saveEvery,
            PrintStream out) {
        float[] w;
        long step;
        try {
            Map<String, Object> state = c.loadRank(job, rank);
            w = floats((Tensor) state.get("w"));
            step = (Long) state.get("step");
            out.println("resumed job " + job + " rank " + rank + " at step " + step);
        } catch (NoCheckpoint e) {
            w = new float[] {1f, -1f, 0.5f, 2f};
            step = 0;
            out.println("first start (" + e.getMessage() + ")");
            save(c, job, rank, world, step, w); // the first save creates the job on the daemon
        }
        while (step < steps) {
            for (int i = 0; i < w.length; i++) {
                w[i] -= 0.1f * w[i]; // a gradient step on |w|^2 / 2
            }
            step++;
            out.printf(Locale.ROOT, "step %d loss %.6f%n", step, loss(w));
            boolean stop = c.shouldStop(job, step);
            if (stop || step % saveEvery == 0 || step == steps) {
                save(c, job, rank, world, step, w);
            }
            if (stop) {
                out.println("the stop flag is up: saved step " + step + ", exiting");
                break;
            }
        }
        return step;
    }

    private static void save(TenplexClient c, String job, int rank, int world, long step, float[] w) {
        c.saveRank(job, step, rank, world, Map.of("w", tensor(w), "step", step), null);
    }

    static double loss(float[] w) {
        double s = 0;
        for (float x : w) {
            s += 0.5 * x * x;
        }
        return s;
    }

    static Tensor tensor(float[] w) {
        ByteBuffer b = ByteBuffer.allocate(w.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : w) {
            b.putFloat(x);
        }
        return new Tensor("f32", new long[] {w.length}, b.array());
    }

    static float[] floats(Tensor t) {
        if (!t.dtype().equals("f32") || t.shape().length != 1) {
            throw new IllegalStateException("expected an f32 vector, the checkpoint has " + t.describe());
        }
        float[] w = new float[Math.toIntExact(t.shape()[0])];
        ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(w);
        return w;
    }
}
