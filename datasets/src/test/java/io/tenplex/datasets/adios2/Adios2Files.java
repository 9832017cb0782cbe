package io.tenplex.datasets.adios2;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The ADIOS2 test files of {@code src/test/resources/adios2} (written by ADIOS2 2.10.2, see its
 * README): each engine's directory, and each global array variable as ADIOS2's {@code bpls -l}
 * reports it (type, steps, shape) with its bytes as ADIOS2's reader returned them (all steps).
 */
final class Adios2Files {
    /** A global array as ADIOS2 reports it and the bytes its reader returned. */
    record Variable(String name, String type, int steps, long[] shape, byte[] bytes) {}

    private static final Pattern BPLS = Pattern.compile("\\s*(\\S+(?: \\S+)?)\\s+(\\S+)\\s+(\\d+)\\*\\{([0-9, ]+)\\}.*");

    private Adios2Files() {}

    /** The directory of the resources. */
    static Path dir() {
        try {
            return Path.of(Adios2Files.class.getResource("/adios2/README.md").toURI()).getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code bp4.bp} or {@code bp5.bp}. */
    static Path file(String engine) {
        return dir().resolve(engine + ".bp");
    }

    /** Variables ADIOS2 reads that this reader refuses (squeezed: bzip2; grows: a shape that changes). */
    static final List<String> REFUSED = List.of("squeezed", "grows");

    /** The served global arrays of {@code engine}'s file, with the bytes ADIOS2's reader read. */
    static List<Variable> variables(String engine) {
        List<Variable> out = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(dir().resolve(engine + ".bpls.txt"))) {
                Matcher m = BPLS.matcher(line);
                if (!m.matches()) {
                    continue;
                }
                Path ref = dir().resolve(engine + ".ref/" + m.group(2) + ".bin");
                if (Files.exists(ref) && !REFUSED.contains(m.group(2))) {
                    long[] shape = Arrays.stream(m.group(4).split(",\\s*")).mapToLong(Long::parseLong).toArray();
                    out.add(new Variable(m.group(2), m.group(1), Integer.parseInt(m.group(3)), shape,
                            Files.readAllBytes(ref)));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    static String url(Path file, String variable) {
        return "adios2://" + file + "#" + variable;
    }

    /** The files this process has open under {@code d} (read from {@code /proc/self/fd}). */
    static List<Path> openUnder(Path d) {
        try (java.util.stream.Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.map(fd -> {
                try {
                    return Files.readSymbolicLink(fd);
                } catch (IOException e) {
                    return Path.of(""); // closed since it was listed
                }
            }).filter(p -> p.startsWith(d)).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
