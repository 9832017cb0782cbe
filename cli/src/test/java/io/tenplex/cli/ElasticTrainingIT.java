package io.tenplex.cli;

import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The end-to-end elastic job: examples/elastic_gpt.py (real PyTorch, gloo, float64, Adam) under
 * {@code tenplex run} with a real daemon, a real FUSE dataset view and real processes. A schedule
 * changes (T,P,D) = (2,2,1) -> (1,1,4) -> (4,1,1) -> (1,2,2) at steps 15, 30 and 45 of 60; the
 * final parameters and Adam state, the loss of every step and the order of the samples read must
 * equal a static (1,1,1) run of the same script (tests/python/check_elastic.py), which also draws
 * the loss plot (kept as cli/target/elastic-loss.png).
 */
class ElasticTrainingIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    private static String tenplex(String... args) {
        String text = CliIT.run(args);
        System.out.println(text);
        return text;
    }

    private static String python(Path dir, String... args) throws Exception {
        String[] cmd = new String[args.length + 1];
        cmd[0] = "/usr/bin/python3";
        System.arraycopy(args, 0, cmd, 1, args.length);
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    @Test
    void elasticRun_equalsStaticRun(@TempDir Path dir) throws Exception {
        Path mnt = Files.createDirectories(dir.resolve("mnt"));
        String example = ROOT.resolve("examples/elastic_gpt.py").toString();
        python(dir, example, "--make-data", dir.resolve("data").toString());
        Files.writeString(dir.resolve("static.json"), "[{\"step\": 0, \"size\": 1}]");
        Files.writeString(dir.resolve("elastic.json"), """
                [{"step": 0, "size": 4, "tp": 2, "pp": 2, "dp": 1},
                 {"step": 15, "size": 4, "tp": 1, "pp": 1, "dp": 4},
                 {"step": 30, "size": 4, "tp": 4, "pp": 1, "dp": 1},
                 {"step": 45, "size": 4, "tp": 1, "pp": 2, "dp": 2}]
                """);
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 256L << 20, "test", mnt, null)
                .withSources(io.tenplex.datasets.SourcePolicy.none().withDataRoots(java.util.List.of(dir.resolve("data")))))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            String[] train = {"--", "/usr/bin/python3", example, "--dataset", dir.resolve("data/index.txt").toString(),
                "--mount", mnt.toString(), "--out", dir.resolve("out").toString(), "--steps", "60"};
            tenplex(concat(new String[] {"run", "--addr", addr, "--job", "static", "--schedule",
                dir.resolve("static.json").toString()}, train));
            String run = tenplex(concat(new String[] {"run", "--addr", addr, "--job", "elastic", "--schedule",
                dir.resolve("elastic.json").toString()}, train));
            assertTrue(run.contains("tenplex run: 3 reconfiguration(s)"), run);
            assertTrue(run.contains("step 15: (T,P,D)=(2,2,1) -> (T,P,D)=(1,1,4)"), run);
            assertTrue(run.contains("step 30: (T,P,D)=(1,1,4) -> (T,P,D)=(4,1,1)"), run);
            assertTrue(run.contains("step 45: (T,P,D)=(4,1,1) -> (T,P,D)=(1,2,2)"), run);
            assertTrue(Files.size(dir.resolve("out/elastic-loss.png")) > 10000); // the plot the example leaves
            Path png = dir.resolve("loss.png");
            String check = python(dir, ROOT.resolve("tests/python/check_elastic.py").toString(), addr,
                    dir.resolve("out").toString(), "static", "elastic", png.toString());
            System.out.println(check);
            assertTrue(check.strip().endsWith("OK"), check);
            assertTrue(check.contains("\"configs\": [[2, 2, 1], [1, 1, 4], [4, 1, 1], [1, 2, 2]]"), check);
            Files.copy(png, ROOT.resolve("cli/target/elastic-loss.png"), StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private static String[] concat(String[] a, String[] b) {
        String[] out = new String[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
