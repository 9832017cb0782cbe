package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench/gpu-check} as CI runs it: {@code pack} makes the bundle a bare GPU host needs (under
 * 64 MiB), and {@code run --device cpu} starts tenplexd from that bundle (its jlinked JRE) and runs
 * every check on the CPU: the stop flag in a real gloo group (NCCL and mixed groups skipped with the
 * reason), exact round trips of every dtype, the state benchmark (its load gives back every tensor of the
 * saved state bit for bit), DTensor (skipped on torch 1.13,
 * saying why) and the README's elastic example under {@code tenplex run} from the bundle, against its
 * static run. Everything but CUDA is exercised on every change.
 */
class GpuCheckIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    /** The bound of a CPU run on each of the state row's three ratios to the floor ({@link #assertCpuPromises}). */
    static final double CPU_X_FLOOR = 8.0;

    private static String run(Path dir, long minutes, String... args) throws Exception {
        Process p = new ProcessBuilder(args).directory(ROOT.toFile()).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(minutes, TimeUnit.MINUTES), "did not end: " + List.of(args));
        String text = new String(out, StandardCharsets.UTF_8);
        System.out.println(text);
        assertEquals(0, p.exitValue(), text);
        return text;
    }

    @Test
    void packThenRunOnTheCpu_everyCheckPassesOrSaysWhyItSkipped(@TempDir Path dir) throws Exception {
        Path pack = dir.resolve("pack");
        String packed = run(dir, 5, "bench/gpu-check", "pack", pack.toString());
        assertTrue(packed.contains("gpu-check: packed"), packed);
        long bytes;
        try (var files = Files.walk(pack)) {
            bytes = files.filter(Files::isRegularFile).mapToLong(f -> f.toFile().length()).sum();
        }
        assertTrue(bytes < 64L << 20, "the pack is " + bytes + " bytes");
        for (String f : List.of("tenplexd.jar", "tenplex-cli.jar", "jre.tgz", "python/tenplex/__init__.py",
                "python/requests/__init__.py", "gpu/gpu_check.py", "gpu/elastic_gpt.py", "gpu-check")) {
            assertTrue(Files.exists(pack.resolve(f)), f);
        }

        String out = run(dir, 20, "bench/gpu-check", "run", pack.toString(), "--device", "cpu",
                "--out", dir.resolve("out").toString(), "--budget", "900", "--rounds", "5");
        JsonNode report = new ObjectMapper().readTree(dir.resolve("out/gpu-check.json").toFile());
        JsonNode checks = report.get("checks");
        Map<String, String> want = Map.of("stop nccl", "skipped", "stop cpu:gloo,cuda:nccl", "skipped",
                "stop gloo", "ok", "roundtrip", "ok", "state", "ok", "elastic", "ok");
        want.forEach((name, status) -> assertEquals(status, checks.get(name).get("status").asText(),
                name + ": " + checks.get(name)));
        assertTrue(checks.get("stop nccl").get("summary").asText().contains("no CUDA device"), out);
        String dtensor = checks.get("dtensor").get("status").asText();
        assertTrue(dtensor.equals("ok") || checks.get("dtensor").get("summary").asText().contains("no public DTensor"),
                checks.get("dtensor").toString());
        JsonNode elastic = checks.get("elastic").get("figures");
        assertEquals(60, elastic.get("steps").asInt());
        assertTrue(elastic.get("max_tensor_rel_diff").asDouble() <= 1e-9, elastic.toString());
        assertStateVerified(checks.get("state").get("figures"));
        assertCpuPromises(checks.get("state").get("figures"));
        assertEquals(0, report.get("jvm_crash_files").size());
        assertTrue(out.contains("| check | result | s | what |"), out);
    }

    /**
     * What a CPU run of the state row can promise (docs/BENCHMARKS.md, "Which targets apply where"). The
     * targets the benchmark prints (blocking save <= 1.5x the floor, completed <= 3x, load into tensors
     * <= 2x) are for a GPU, whose floor is a device-to-host DMA of 4.25 GB; on the CPU the floor is a
     * memory copy of 0.17 GB in about 30 ms, the fixed costs (the reservation request, the commit's
     * round trip) are of its order and the daemon shares the cores, so the ratios measure 2.5-5.3 here.
     * A CPU run promises: the timed saves went through shared memory (no silent REST fallback), and each
     * of the three is within {@value #CPU_X_FLOOR}x the floor. The failure names every measured figure.
     */
    static void assertCpuPromises(JsonNode figures) {
        String measured = "measured (median of " + figures.path("state").path("rounds").asText() + " rounds, "
                + figures.path("state").path("GB").asText() + " GB): " + figures.path("summary") + "; rows "
                + figures.path("rows") + "; saves went via " + figures.path("via");
        for (String save : List.of("tenplex save, blocking part (async)", "tenplex save, completed (published, sealed)")) {
            assertEquals("shared_memory", figures.path("via").path(save).asText(), save + " did not go through shared "
                    + "memory; " + measured);
        }
        for (String ratio : List.of("blocking_x_floor", "completed_x_floor", "load_into_x_floor")) {
            double x = figures.path("summary").path(ratio).asDouble(Double.NaN);
            assertTrue(x <= CPU_X_FLOOR, ratio + " " + x + " above the CPU bound " + CPU_X_FLOOR + " (the GPU targets "
                    + "1.5, 3 and 2 apply on a GPU); " + measured);
        }
    }

    /** The state row: the load gave back every tensor of the saved state bit for bit (all of them, by count and bytes). */
    private static void assertStateVerified(JsonNode figures) {
        assertTrue(figures.get("rows").has("tenplex load into existing tensors"), figures.toString());
        JsonNode state = figures.get("state");
        JsonNode verified = figures.get("verified");
        assertTrue(verified != null && state.get("tensors").asInt() > 0, figures.toString());
        assertEquals(state.get("tensors").asInt(), verified.get("tensors").asInt(), "tensors compared bit for bit");
        assertEquals(state.get("GB").asDouble(), verified.get("bytes").asLong() / 1e9, 5e-4, "bytes compared");
    }
}
