package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.StoreException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which directories an ADIOS2 URL may name ({@link SourcePolicy#localDirectory}): a directory below a data
 * root, by its canonical path; a link to a directory outside, a path that climbs out with {@code ..}, a
 * file, a missing directory and any path when no root is set get the same 403 that names a directory.
 */
class LocalDirectoryTest {
    @TempDir
    Path tmp;

    @Test
    void onlyDirectoriesBelowARoot_byTheirCanonicalPath() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("root"));
        Path outside = Files.createDirectories(tmp.resolve("outside/sim.bp"));
        Path inside = Files.createDirectories(root.resolve("runs/sim.bp"));
        Files.createSymbolicLink(root.resolve("link.bp"), outside);
        Files.createSymbolicLink(root.resolve("inner-link.bp"), inside);
        Files.writeString(root.resolve("file.bp"), "ADIOS-BP");
        SourcePolicy policy = SourcePolicy.none().withDataRoots(List.of(root));
        assertEquals(inside.toRealPath(), policy.localDirectory(inside.toString()));
        assertEquals(inside.toRealPath(), policy.localDirectory(root.resolve("inner-link.bp").toString()),
                "a link that stays below the root is its target");
        for (String refused : List.of(root.resolve("link.bp").toString(), root.resolve("runs/../../outside/sim.bp").toString(),
                root.resolve("file.bp").toString(), root.resolve("missing.bp").toString(), outside.toString())) {
            StoreException e = assertThrows(StoreException.class, () -> policy.localDirectory(refused), refused);
            assertEquals(StoreException.Kind.FORBIDDEN, e.kind(), refused);
            assertTrue(e.getMessage().contains("is not a readable directory below this daemon's data roots"), e.getMessage());
        }
        StoreException off = assertThrows(StoreException.class, () -> SourcePolicy.none().localDirectory(inside.toString()));
        assertEquals(StoreException.Kind.FORBIDDEN, off.kind());
    }
}
