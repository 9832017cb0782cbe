package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Every subcommand answers {@code --help}, {@code -h} and {@code tenplex help <sub>} with its usage
 * and exit status 0 (even those with required options); user mistakes that need no daemon (a
 * missing or invalid file, a bad {@code --addr}) give one line and exit status 2.
 */
class CliHelpTest {
    /** What a command printed on standard output and error, and its exit status. */
    record Ran(int status, String out, String err) {
    }

    static Ran run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = TenplexCli.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int status = cl.execute(args);
        return new Ran(status, out.toString(), err.toString());
    }

    /** Every command path below {@code tenplex}, e.g. {@code [status]}, {@code [dataset, index]}. */
    static List<List<String>> commands(CommandLine cl, List<String> prefix) {
        List<List<String>> out = new ArrayList<>();
        for (Map.Entry<String, CommandLine> e : cl.getSubcommands().entrySet()) {
            if (e.getKey().equals("help")) {
                continue;
            }
            List<String> path = new ArrayList<>(prefix);
            path.add(e.getKey());
            out.add(path);
            out.addAll(commands(e.getValue(), path));
        }
        return out;
    }

    @Test
    void everySubcommand_answersHelpAndH_withExit0() {
        List<List<String>> all = commands(TenplexCli.commandLine(), List.of());
        assertTrue(all.size() >= 13, all.toString()); // 10 commands and dataset's 3
        for (List<String> path : all) {
            for (String flag : List.of("--help", "-h")) {
                List<String> args = new ArrayList<>(path);
                args.add(flag);
                Ran r = run(args.toArray(String[]::new));
                assertEquals(0, r.status(), args + ": " + r.err());
                assertTrue(r.out().startsWith("Usage: tenplex " + String.join(" ", path)), args + ": " + r.out());
                assertTrue(r.err().isEmpty(), args + ": " + r.err());
            }
        }
    }

    @Test
    void helpCommand_showsTheSubcommandsUsage() {
        for (List<String> path : commands(TenplexCli.commandLine(), List.of())) {
            List<String> args = new ArrayList<>(path);
            args.add(args.size() - 1, "help"); // tenplex help status, tenplex dataset help index
            Ran r = run(args.toArray(String[]::new));
            assertEquals(0, r.status(), args + ": " + r.err());
            assertTrue(r.out().startsWith("Usage: tenplex " + String.join(" ", path)), args + ": " + r.out());
        }
        Ran top = run("help");
        assertEquals(0, top.status());
        assertTrue(top.out().contains("reconfigure") && top.out().contains("dataset"), top.out());
    }

    @Test
    void missingRequestFile_isOneLine_exit2(@TempDir Path dir) {
        for (String cmd : List.of("plan", "reconfigure")) {
            Ran r = run(cmd, "--dry-run", "--job", "x", "--request", dir.resolve("nofile.json").toString());
            if (cmd.equals("reconfigure")) {
                r = run(cmd, "--job", "x", "--request", dir.resolve("nofile.json").toString());
            }
            assertOneLine(r, "tenplex: --request " + dir.resolve("nofile.json") + ": no such file");
        }
        assertOneLine(run("run", "--schedule", dir.resolve("s.json").toString(), "--", "true"),
                "tenplex: --schedule " + dir.resolve("s.json") + ": no such file");
    }

    @Test
    void invalidJson_isOneLine_exit2(@TempDir Path dir) throws Exception {
        Path bad = Files.writeString(dir.resolve("bad.json"), "{\"from\": {\"tp\": 2,,}}");
        Ran r = run("plan", "--dry-run", "--job", "x", "--request", bad.toString());
        assertOneLine(r, "tenplex: --request " + bad + " is not valid JSON: Unexpected character (',' (code 44))");
        assertTrue(r.err().contains("at line 1, column 19"), r.err());
        assertFalse(r.err().contains("REDACTED") || r.err().contains("StreamReadFeature"), r.err());
        assertOneLine(run("run", "--schedule", bad.toString(), "--", "true"), "tenplex: --schedule " + bad
                + " is not valid JSON");
    }

    @Test
    void badAddr_isOneLine_exit2() {
        for (String addr : List.of("ftp://127.0.0.1:20010", "127.0.0.1 20010", "://127.0.0.1:20010")) {
            assertOneLine(run("status", "--addr", addr), "tenplex: --addr " + addr + " is not a daemon address; give "
                    + "host:port or http(s)://host:port");
        }
    }

    static void assertOneLine(Ran r, String start) {
        assertEquals(2, r.status(), r.err());
        assertTrue(r.err().startsWith(start), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertFalse(r.err().contains("\tat "), r.err());
    }
}
