package io.tenplex.jobs.durable;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.Limits;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.store.JobNamespace;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/**
 * The files of the durable tier under one directory: {@code DIR/jobs/<job>/<step>/manifest.json} (the
 * generation; present only once complete) and {@code DIR/jobs/<job>/<step>/blocks.pack} (the blocks
 * that flush wrote). Manifests are written under a temporary name, synced, renamed into place and the
 * directory synced, so a crash leaves either no manifest or a whole one.
 */
final class DurableDir {
    static final String JOBS = "jobs";
    static final String MANIFEST = "manifest.json";
    static final String PACK = "blocks.pack";
    private static final String TMP = ".tmp";
    /** {@code DIR/jobs/<job>/unflushed}: the step of a complete generation whose flush failed, and why. */
    static final String UNFLUSHED = "unflushed";
    /** The largest manifest read (a million entries of a few blocks each fit well below it). */
    static final long MAX_MANIFEST = 1L << 30;

    private final Path root;
    private final ObjectMapper json = new ObjectMapper();

    DurableDir(Path root) {
        this.root = root;
    }

    Path root() {
        return root;
    }

    Path job(String job) {
        String problem = JobNamespace.nameProblem(job);
        if (problem != null) {
            throw new IllegalArgumentException("job name '" + job + "' cannot name a directory: " + problem);
        }
        return root.resolve(JOBS).resolve(job);
    }

    Path generation(String job, long step) {
        return job(job).resolve(Long.toString(step));
    }

    /** The pack of generation {@code step}, relative to the job's directory (as manifests name it). */
    static String packName(long step) {
        return step + "/" + PACK;
    }

    Path pack(String job, String relative) {
        Path p = job(job).resolve(relative).normalize();
        if (!p.startsWith(job(job)) || p.equals(job(job))) {
            throw new IllegalArgumentException("pack '" + relative + "' is outside job " + job + "'s directory");
        }
        return p;
    }

    /** The jobs that have a directory here. */
    List<String> jobs() throws IOException {
        List<String> out = new ArrayList<>();
        Path dir = root.resolve(JOBS);
        if (Files.isDirectory(dir)) {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
                s.forEach(p -> {
                    if (Files.isDirectory(p) && JobNamespace.nameProblem(p.getFileName().toString()) == null) {
                        out.add(p.getFileName().toString());
                    }
                });
            }
        }
        return out;
    }

    /** The steps that have a generation directory (complete or not), oldest first. */
    TreeSet<Long> steps(String job) throws IOException {
        TreeSet<Long> out = new TreeSet<>();
        Path dir = job(job);
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            for (Path p : s) {
                String n = p.getFileName().toString();
                java.util.OptionalLong step = JobLayout.step(n);
                if (step.isPresent() && Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    out.add(step.getAsLong());
                }
            }
        }
        return out;
    }

    /** Whether generation {@code step} has its final manifest. */
    boolean complete(String job, long step) {
        return Files.exists(generation(job, step).resolve(MANIFEST), LinkOption.NOFOLLOW_LINKS);
    }

    /** The manifest of a complete generation; empty when it has none. @throws IOException when it is unreadable */
    Optional<DurableManifest> read(String job, long step) throws IOException {
        Path m = generation(job, step).resolve(MANIFEST);
        try {
            DurableManifest d = json.readValue(readRegular(m, MAX_MANIFEST), DurableManifest.class);
            if (!DurableManifest.FORMAT.equals(d.format()) || d.version() != DurableManifest.VERSION
                    || d.step() != step || !job.equals(d.job())) {
                throw new IOException(m + " is not a version " + DurableManifest.VERSION + " manifest of generation "
                        + step + " of job " + job);
            }
            checkRanks(m, d);
            checkSettings(m, d);
            return Optional.of(d);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
    }

    /**
     * The bytes of a regular file of at most {@code max} bytes. Anything else (a FIFO, a device, a
     * directory, a symbolic link) is refused without being opened, so that reading it cannot block.
     *
     * @throws NoSuchFileException when nothing is there
     * @throws IOException when it is not a regular file or is larger than {@code max}
     */
    static byte[] readRegular(Path file, long max) throws IOException {
        BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!a.isRegularFile()) {
            throw new IOException(file + " is not a regular file (" + kind(a) + "); not read");
        }
        if (a.size() > max) {
            throw new IOException(file + " has " + a.size() + " bytes (at most " + max + " expected); not read");
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            long size = ch.size();
            if (size > max) {
                throw new IOException(file + " has " + size + " bytes (at most " + max + " expected); not read");
            }
            ByteBuffer b = ByteBuffer.allocate((int) size);
            while (b.hasRemaining() && ch.read(b) >= 0) {
                // until the size read above
            }
            return java.util.Arrays.copyOf(b.array(), b.position());
        }
    }

    private static String kind(BasicFileAttributes a) {
        return a.isDirectory() ? "a directory" : a.isSymbolicLink() ? "a symbolic link" : "a FIFO, socket or device";
    }

    /** Retention and L2/L3 settings in the ranges the daemon takes ({@link Tiers.Settings}). */
    private static void checkSettings(Path m, DurableManifest d) throws IOException {
        DurableManifest.Levels l = d.levels() != null ? d.levels() : new DurableManifest.Levels(0, 0, 0);
        try {
            new Tiers.Settings(l.partners(), l.groupSize(), l.parity(), d.durableKeep());
        } catch (IllegalArgumentException e) {
            throw new IOException(m + ": " + e.getMessage());
        }
    }

    /** A world of [1, MAX_RANKS] ranks and rank keys that are ranks of it, written as Integer.toString does. */
    private static void checkRanks(Path m, DurableManifest d) throws IOException {
        if (d.world() < 1 || d.world() > Limits.MAX_RANKS) {
            throw new IOException(m + ": a world of " + d.world() + " ranks (expected: 1 to " + Limits.MAX_RANKS + ")");
        }
        for (String r : d.ranks().keySet()) {
            if (!r.matches("0|[1-9][0-9]{0,8}") || Integer.parseInt(r) >= d.world()) {
                throw new IOException(m + ": rank '" + r + "' is not a rank of a world of " + d.world());
            }
        }
    }

    /** Creates the generation's directory (and its parents) and syncs the job's directory. */
    Path createGeneration(String job, long step) throws IOException {
        Path g = Files.createDirectories(generation(job, step));
        syncDirectory(job(job));
        return g;
    }

    /** Writes the manifest whole: a temporary file, synced, renamed into place, the directory synced. */
    void writeManifest(DurableManifest m) throws IOException {
        Path dir = generation(m.job(), m.step());
        Path tmp = dir.resolve(MANIFEST + TMP);
        byte[] bytes = json.writerWithDefaultPrettyPrinter().writeValueAsBytes(m);
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        try {
            Files.move(tmp, dir.resolve(MANIFEST), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            throw new IOException("the checkpoint directory's file system cannot rename atomically: " + dir, e);
        }
        syncDirectory(dir);
    }

    /** Removes a generation's manifest (it stops being a generation), syncing its directory. */
    void deleteManifest(String job, long step) throws IOException {
        Path dir = generation(job, step);
        Files.deleteIfExists(dir.resolve(MANIFEST));
        syncDirectory(dir);
    }

    /**
     * Removes the job's directory and everything in it: every manifest first (a restart that finds the
     * rest half removed restores nothing of it), then the files. @return the bytes removed
     */
    long deleteJob(String job) throws IOException {
        Path dir = job(job);
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        for (long step : steps(job)) {
            deleteManifest(job, step);
        }
        long[] bytes = {0};
        try (java.util.stream.Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                    bytes[0] += Files.size(p);
                }
                Files.delete(p);
            }
        }
        syncDirectory(dir.getParent());
        return bytes[0];
    }

    /** Removes a generation's directory and everything in it. */
    void deleteGeneration(String job, long step) throws IOException {
        Path dir = generation(job, step);
        if (Files.isDirectory(dir)) {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
                for (Path p : s) {
                    Files.deleteIfExists(p);
                }
            }
            Files.deleteIfExists(dir);
            syncDirectory(job(job));
        }
    }

    /**
     * Notes that generation {@code step} completed but could not be flushed (best effort: the disk may be
     * full), so that a restart that resumes from an older one says so.
     */
    void noteUnflushed(String job, long step, String why) {
        try {
            Files.write(job(job).resolve(UNFLUSHED), (step + "\n" + why.replace('\n', ' ') + "\n")
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (IOException | RuntimeException e) {
            // the log said it already
        }
    }

    /** The step (and why) of the newest generation noted as not flushed, if any. */
    Optional<String[]> unflushed(String job) {
        try {
            String[] lines = new String(readRegular(job(job).resolve(UNFLUSHED), 4096),
                    java.nio.charset.StandardCharsets.UTF_8).split("\n", 2);
            return JobLayout.step(lines[0].strip()).isPresent() ? Optional.of(lines) : Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** Forgets the note (a newer generation is durable). */
    void clearUnflushed(String job) throws IOException {
        Files.deleteIfExists(job(job).resolve(UNFLUSHED));
    }

    /** fsync of a directory, so that a rename or a new entry in it survives a crash. */
    static void syncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }
}
