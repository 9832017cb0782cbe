package io.tenplex.daemon;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Tenplexd processes on loopback that know each other as {@code --peers}, and Python drivers run against them. */
final class PeerDaemons implements AutoCloseable {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    final List<DaemonProcess> daemons = new ArrayList<>();

    /** What a driver printed (stdout and stderr) and how it exited. */
    record Driver(int exit, String out) {}

    /** Starts {@code n} daemons, worker w on the w-th reserved port, each with {@code options} too. */
    static PeerDaemons start(int n, String... options) throws Exception {
        PeerDaemons c = new PeerDaemons();
        DaemonProcess.Peers peers = DaemonProcess.reservePeers(n);
        try {
            for (int w = 0; w < n; w++) {
                List<String> args = new ArrayList<>(List.of("--port", peers.port(w), "--peers", peers.arg()));
                args.addAll(List.of(options));
                c.daemons.add(DaemonProcess.start(args.toArray(String[]::new)));
            }
        } catch (Exception e) {
            c.close();
            throw e;
        }
        return c;
    }

    /** Runs {@code tests/python/<script>} with Debian's python3 and every daemon's URL as arguments, to its end. */
    Driver run(String script) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/python3", ROOT.resolve("tests/python").resolve(script)
                .toString()));
        daemons.forEach(d -> cmd.add(d.url()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        System.out.println(out);
        return new Driver(p.waitFor(), out);
    }

    @Override
    public void close() throws Exception {
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }
}
