package io.tenplex.datasets.hdf5;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Test files made by h5py and netCDF4 ({@code tests/python/make_arrays.py}, run with Debian's
 * {@code /usr/bin/python3}) and what those libraries read from them.
 */
public final class ArrayFiles {
    /** One array of the files: its source URL, rows, row bytes and its bytes as the library reads them. */
    public record Array(String id, String url, int rows, int rowBytes, byte[] bytes) {}

    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    private ArrayFiles() {}

    /** Writes the files into {@code dir} and returns its arrays. */
    public static List<Array> make(Path dir) throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/make_arrays.py").toString(),
                dir.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "make_arrays.py failed (needs python3-h5py and python3-netcdf4): " + out);
        JsonNode manifest = new ObjectMapper().readTree(dir.resolve("manifest.json").toFile());
        List<Array> arrays = new ArrayList<>();
        for (JsonNode a : manifest) {
            arrays.add(new Array(a.get("id").asText(), a.get("url").asText(), a.get("rows").asInt(),
                    a.get("rowBytes").asInt(), Files.readAllBytes(dir.resolve("expect/" + a.get("id").asText() + ".bin"))));
        }
        return arrays;
    }
}
