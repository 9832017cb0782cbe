package io.tenplex.datasets.adios2;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.data.DatasetIndex;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every global array of the BP4 and BP5 files ADIOS2 2.10.2 wrote (every primitive type, 1 to 3
 * dimensions, one row, several steps, a variable absent from a step, a float complex array, a
 * variable written as three blocks per step) is served with the type, shape and steps {@code bpls}
 * reports, and its rows are bit for bit the bytes ADIOS2's own reader returned, whole, row by row and
 * in ranges that cut rows. What the reader does not serve is refused, naming what is refused.
 */
class Adios2SourcesTest {
    private final Adios2Sources sources = new Adios2Sources(Path::of);

    @AfterEach
    void close() {
        sources.close();
        assertEquals(0, sources.openFiles());
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void everyVariable_isWhatAdios2Reports_andReadsAsAdios2ReadIt(String engine) throws Exception {
        List<Adios2Files.Variable> vars = Adios2Files.variables(engine);
        assertEquals(16, vars.size(), "the reference variables of " + engine);
        for (Adios2Files.Variable v : vars) {
            String url = Adios2Files.url(Adios2Files.file(engine), v.name());
            assertTrue(sources.claims(url));
            assertEquals(v.bytes().length, sources.check(url), v.name());
            Adios2Sources.Description d = sources.describe(url);
            assertEquals(v.type(), d.type().adiosName, v.name());
            assertArrayEquals(v.shape(), d.shape(), v.name());
            assertEquals(v.steps(), d.steps(), v.name());
            DatasetIndex.File index = sources.index(url, n -> { });
            long rows = v.steps() * v.shape()[0];
            assertEquals(rows, index.samples(), v.name());
            ByteBuffer all = ByteBuffer.allocate(v.bytes().length);
            sources.read(url, 0, all);
            assertArrayEquals(v.bytes(), all.array(), v.name());
            int rowBytes = (int) (v.bytes().length / rows);
            for (int r = 0; r < rows; r++) {
                ByteBuffer row = ByteBuffer.allocate(rowBytes);
                sources.read(url, (long) r * rowBytes, row);
                assertArrayEquals(Arrays.copyOfRange(v.bytes(), r * rowBytes, (r + 1) * rowBytes), row.array(),
                        v.name() + " row " + r);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void rangesThatCutRows_readAsAdios2ReadThem(String engine) throws Exception {
        Random rnd = new Random(7);
        for (Adios2Files.Variable v : Adios2Files.variables(engine)) {
            String url = Adios2Files.url(Adios2Files.file(engine), v.name());
            for (int i = 0; i < 20; i++) {
                int from = rnd.nextInt(v.bytes().length);
                int n = rnd.nextInt(v.bytes().length - from + 1);
                ByteBuffer b = ByteBuffer.allocate(n + 3).position(3);
                sources.read(url, from, b);
                assertArrayEquals(Arrays.copyOfRange(v.bytes(), from, from + n), Arrays.copyOfRange(b.array(), 3, n + 3),
                        v.name() + " bytes " + from + "+" + n);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void theBlocksOfADecomposition_areAssembled(String engine) throws Exception {
        Adios2Files.Variable v = Adios2Files.variables(engine).stream().filter(x -> x.name().equals("blocks"))
                .findFirst().orElseThrow();
        String url = Adios2Files.url(Adios2Files.file(engine), "blocks");
        Adios2Array a = sources.array(url);
        assertEquals(3, a.variable().steps().size());
        for (List<Adios2Variable.Block> step : a.variable().steps()) {
            assertEquals(3, step.size(), "blocks per step");
        }
        // row 5 of step 1 is made of two blocks: cols 0..2 and 3..5, each with its own values
        ByteBuffer row = ByteBuffer.allocate(6 * 4);
        sources.read(url, (10 + 5) * 24, row);
        assertArrayEquals(Arrays.copyOfRange(v.bytes(), 15 * 24, 16 * 24), row.array());
        assertFalse(Arrays.equals(Arrays.copyOfRange(row.array(), 0, 12), Arrays.copyOfRange(row.array(), 12, 24)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void unsupportedVariables_areRefused_namingWhat(String engine) {
        Path f = Adios2Files.file(engine);
        assertRefused(Adios2Files.url(f, "local"), "variable local of " + f, "local array");
        assertRefused(Adios2Files.url(f, "scalar"), "variable scalar of " + f, "global value");
        assertRefused(Adios2Files.url(f, "text"), "variable text of " + f, "");
        assertRefused(Adios2Files.url(f, "grows"), "variable grows of " + f, "shape changes between steps");
        assertRefused(Adios2Files.url(f, "squeezed"), "variable squeezed of " + f, "operator");
        assertRefused(Adios2Files.url(f, "nothing"), f + " (ADIOS2 " + engine.toUpperCase() + ") has no variable 'nothing'",
                "it has ");
    }

    @org.junit.jupiter.api.Test
    void onlyAdios2Urls_areClaimed_andNamedCanonically() {
        assertTrue(sources.claims("adios2:/d/x.bp#grp/v"));
        assertFalse(sources.claims("netcdf:///d/x.nc#v"));
        assertEquals("adios2:///d/x.bp#grp/v", io.tenplex.datasets.hdf5.ArrayUrl.parse("adios2:/d/x.bp#grp/v").toString());
        assertThrows(IllegalArgumentException.class, () -> sources.claims("adios2:///d/x.bp"));
    }

    private void assertRefused(String url, String start, String part) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sources.check(url));
        assertTrue(e.getMessage().startsWith(start) && e.getMessage().contains(part), e.getMessage());
    }
}
