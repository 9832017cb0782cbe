package io.tenplex.jobs.durable;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control files a job's durable generations need after a restart, kept beside them in
 * {@code DIR/jobs/<job>/control/}: the model spec ({@code model.json}) and partition rules
 * ({@code rules.json}) a reconfiguration of a restored generation plans from, and the run record
 * ({@code run.json}) by which the same {@code tenplex run} command, run again, knows its job. Written
 * after each flush (whole or not at all: a temporary file, forced, then moved over it), removed with
 * the job's directory, and put back into the store at restore where the store has none. A file
 * unchanged since it was last written is not written again.
 */
final class ControlFiles {
    private static final Logger LOG = LoggerFactory.getLogger(ControlFiles.class);
    /** The files kept, by their name under {@code /job/<job>/}. */
    static final List<String> NAMES = List.of("model.json", "rules.json", "run.json");
    /** A larger file is not put back (a control file is a few KiB; a model spec of a large model a few MiB). */
    static final long MAX_BYTES = 16L << 20;
    static final String DIR = "control";

    private final DurableDir dir;
    private final TensorStore store;
    /** job/name to the SHA-256 of what was last written there: a flush rewrites only what changed. */
    private final java.util.Map<String, String> written = new java.util.concurrent.ConcurrentHashMap<>();

    ControlFiles(DurableDir dir, TensorStore store) {
        this.dir = dir;
        this.store = store;
    }

    private static StorePath inStore(String job, String name) {
        return new JobLayout(job).root().child(name);
    }

    /** Keeps the job's control files as the store has them now (one the store no longer has is removed). */
    void keep(String job) {
        Path d = dir.job(job).resolve(DIR);
        for (String name : NAMES) {
            Path f = d.resolve(name);
            try {
                Optional<String> text = read(job, name);
                if (text.isEmpty()) {
                    written.remove(job + "/" + name);
                    Files.deleteIfExists(f);
                    continue;
                }
                String digest = sha256(text.get());
                if (digest.equals(written.get(job + "/" + name)) && Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                    continue; // unchanged since it was last kept
                }
                Files.createDirectories(d);
                Path tmp = d.resolve(name + ".tmp");
                try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                        StandardOpenOption.TRUNCATE_EXISTING)) {
                    ch.write(java.nio.ByteBuffer.wrap(text.get().getBytes(StandardCharsets.UTF_8)));
                    ch.force(true);
                }
                Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                written.put(job + "/" + name, digest);
            } catch (IOException | RuntimeException e) {
                written.remove(job + "/" + name);
                LOG.warn("control file {} of job {} not kept in {}{}: {}", name, job, d, DiskFull.is(e) ? " (no space "
                        + "left)" : "", e.toString());
            }
        }
    }

    private static String sha256(String text) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e); // every JDK has SHA-256
        }
    }

    private Optional<String> read(String job, String name) {
        try {
            return SmallFiles.read(store, inStore(job, name));
        } catch (StoreException e) {
            return Optional.empty(); // not a file (a directory of that name): nothing to keep
        }
    }

    /**
     * Puts the job's kept control files back into the store where it has none of that name; one too
     * large, a link or unreadable is logged and left out. @return the names put back
     */
    List<String> restore(String job) {
        Path d = dir.job(job).resolve(DIR);
        List<String> out = new java.util.ArrayList<>();
        for (String name : NAMES) {
            Path f = d.resolve(name);
            try {
                if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                    continue;
                }
                long size = Files.size(f);
                if (size > MAX_BYTES) {
                    LOG.warn("control file {} has {} bytes (at most {} are read): not restored", f, size, MAX_BYTES);
                    continue;
                }
                if (store.stat(inStore(job, name)).isEmpty()) {
                    SmallFiles.put(store, inStore(job, name), Files.readAllBytes(f));
                    out.add(name);
                }
            } catch (IOException | RuntimeException e) {
                LOG.warn("control file {} not restored: {}", f, e.toString());
            }
        }
        return out;
    }
}
