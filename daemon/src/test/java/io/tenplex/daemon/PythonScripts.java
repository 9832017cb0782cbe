package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;

/**
 * The Python test scripts of tests/python as ITs run them: under the host's {@code /usr/bin/python3}
 * (Debian bookworm, torch 1.13) or under torch 2 ({@code bin/lib/torch2-python}, Debian trixie's
 * torch 2.6 in a chroot that bin/lib/torch2-env.sh builds; docs/TORCH.md).
 */
public final class PythonScripts {
    /** The repository. */
    public static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    /** The host's interpreter (torch 1.13). */
    public static final List<String> HOST = List.of("/usr/bin/python3");
    /** Set (to 1) where the torch 2 environment must exist: its absence fails instead of skipping (CI). */
    public static final String REQUIRE_TORCH2 = "TENPLEX_REQUIRE_TORCH2";

    private static List<String> torch2;
    private static String torch2Missing;

    private PythonScripts() {
    }

    /**
     * Runs {@code python script} (a path relative to the repository) with {@code env} added to this
     * process's environment; it must exit 0 and end its output with OK. Returns its output.
     */
    /** The longest a script may run (the longest here, the pod launchers' chaos, takes about 3 minutes). */
    static final long SCRIPT_MINUTES = 15;

    public static String run(List<String> python, Map<String, String> env, String script) throws Exception {
        List<String> cmd = new ArrayList<>(python);
        cmd.add(ROOT.resolve(script).toString());
        java.nio.file.Path log = java.nio.file.Files.createTempFile("python-script", ".log");
        ProcessBuilder py = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        py.environment().putAll(env);
        Process p = py.start();
        boolean ended = p.waitFor(SCRIPT_MINUTES, java.util.concurrent.TimeUnit.MINUTES);
        if (!ended) { // a hung script fails with what it said, instead of holding the suite until CI's limit
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly().waitFor();
        }
        String output = java.nio.file.Files.readString(log, StandardCharsets.UTF_8);
        java.nio.file.Files.deleteIfExists(log);
        assertTrue(ended, String.join(" ", cmd) + " did not end within " + SCRIPT_MINUTES + " minutes; it said:\n" + output);
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + " " + env + "\n" + output);
        assertTrue(output.strip().endsWith("OK"), output);
        return output;
    }

    /**
     * The torch 2 interpreter: {@code TENPLEX_TORCH2_PYTHON}, or bin/lib/torch2-python, once it has
     * imported a torch 2.x. Where it cannot, the calling test is skipped with the reason, or fails when
     * {@code TENPLEX_REQUIRE_TORCH2=1}.
     */
    public static synchronized List<String> torch2() throws IOException, InterruptedException {
        if (torch2 == null && torch2Missing == null) {
            probeTorch2();
        }
        if (torch2Missing != null) {
            if ("1".equals(System.getenv(REQUIRE_TORCH2))) {
                fail(torch2Missing + " (" + REQUIRE_TORCH2 + "=1; .ci/run builds it with bin/lib/torch2-env.sh build)");
            }
            Assumptions.abort(torch2Missing + " (build it as root: bin/lib/torch2-env.sh build; docs/TORCH.md)");
        }
        return torch2;
    }

    private static void probeTorch2() throws IOException, InterruptedException {
        String runner = System.getenv().getOrDefault("TENPLEX_TORCH2_PYTHON",
                ROOT.resolve("bin/lib/torch2-python").toString());
        Process p;
        try {
            p = new ProcessBuilder(runner, "-c", "import torch; print('torch', torch.__version__)")
                    .redirectErrorStream(true).start();
        } catch (IOException e) {
            torch2Missing = "no torch 2 environment: " + runner + " does not run: " + e.getMessage();
            return;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        int rc = p.waitFor();
        if (rc == 0 && out.matches("(?s).*torch [2-9]\\.[^\\n]*")) {
            torch2 = List.of(runner);
        } else {
            torch2Missing = "no torch 2 environment: " + runner + " exited " + rc + ": " + out;
        }
    }
}
