package io.tenplex.datasets.netcdf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * NetCDF classic test files made by netCDF4 ({@code tests/python/make_classic.py}, run with
 * Debian's {@code /usr/bin/python3}) and what netCDF4 reads from them, big-endian as stored.
 */
final class ClassicFiles {
    /** One variable: its source URL, rows, row bytes, whether it is a record variable, and its bytes. */
    record Variable(String id, String url, int rows, int rowBytes, boolean record, String dtype, byte[] bytes) {}

    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    private ClassicFiles() {}

    /** Writes the files into {@code dir} and returns their variables. */
    static List<Variable> make(Path dir) throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/make_classic.py").toString(),
                dir.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "make_classic.py failed (needs python3-netcdf4): " + out);
        List<Variable> vars = new ArrayList<>();
        for (JsonNode a : new ObjectMapper().readTree(dir.resolve("manifest.json").toFile())) {
            vars.add(new Variable(a.get("id").asText(), a.get("url").asText(), a.get("rows").asInt(),
                    a.get("rowBytes").asInt(), a.get("record").asBoolean(), a.get("dtype").asText(),
                    Files.readAllBytes(dir.resolve("expect/" + a.get("id").asText() + ".bin"))));
        }
        return vars;
    }
}
