package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The resource changes and stop flags of this daemon's jobs as part of their durable state: kept under
 * the checkpoint directory ({@code changes/<job>/<id>.json}: the request and, once its save is complete,
 * the generation it moves; {@code changes/<job>/stop.json}: a raised stop flag), written before the
 * request is answered, removed when the change ends or the flag comes down, and read back when the
 * daemon starts on that directory ({@link #pending}, {@link #flags}): a change that waited for the save
 * waits again (with its id), one that was moving a generation moves the current one, a raised flag is
 * raised again. Without a checkpoint directory nothing is kept (a journal of {@code null}).
 */
public final class ChangeJournal {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ChangeJournal.class);
    private final Path dir;

    /** A change kept from before a restart: its job, id, request and the generation it moved (-1: none yet). */
    public record Pending(String job, String id, JsonNode body, long generation) {
    }

    /** A stop flag kept from before a restart. */
    public record Flag(String job, OptionalLong atStep, String reason) {
    }

    /** A journal under {@code checkpoints} (the daemon's own checkpoint directory), or null when there is none. */
    public static ChangeJournal under(Path checkpoints) {
        return checkpoints == null ? null : new ChangeJournal(checkpoints.resolve("changes"));
    }

    ChangeJournal(Path dir) {
        this.dir = dir;
    }

    /** Keeps a change's request (before it is answered). */
    void started(String job, String id, JsonNode body) {
        ObjectNode n = JSON.createObjectNode();
        n.put("job", job);
        n.put("id", id);
        n.set("body", body);
        write(dir.resolve(job).resolve(id + ".json"), n);
    }

    /** The change's save is complete: after a restart it moves the current generation without waiting. */
    void saved(String job, String id, long generation) {
        Path f = dir.resolve(job).resolve(id + ".json");
        try {
            ObjectNode n = (ObjectNode) JSON.readTree(f.toFile());
            n.put("generation", generation);
            write(f, n);
        } catch (IOException | RuntimeException e) { // the change goes on; a restart would wait for the save again
            LOG.warn("resource change {} of job {}: its saved generation not kept: {}", id, job, e.toString());
        }
    }

    /** The change ended: nothing of it is kept. */
    void ended(String job, String id) {
        delete(dir.resolve(job).resolve(id + ".json"));
    }

    /** A stop flag raised ({@code raised}) or cleared for {@code job}. */
    public void flag(String job, boolean raised, OptionalLong atStep, String reason) {
        Path f = dir.resolve(job).resolve("stop.json");
        if (!raised) {
            delete(f);
            return;
        }
        ObjectNode n = JSON.createObjectNode();
        n.put("job", job);
        if (atStep.isPresent()) {
            n.put("atStep", atStep.getAsLong());
        }
        n.put("reason", reason);
        write(f, n);
    }

    /** The changes kept from before this start, oldest file first per job; an unreadable one is logged and skipped. */
    public List<Pending> pending() {
        List<Pending> out = new ArrayList<>();
        for (JsonNode n : read(false)) {
            out.add(new Pending(n.path("job").asText(), n.path("id").asText(), n.path("body"),
                    n.path("generation").asLong(-1)));
        }
        return out;
    }

    /** The stop flags kept from before this start. */
    public List<Flag> flags() {
        List<Flag> out = new ArrayList<>();
        for (JsonNode n : read(true)) {
            out.add(new Flag(n.path("job").asText(), n.path("atStep").isNumber() ? OptionalLong.of(n.path("atStep")
                    .asLong()) : OptionalLong.empty(), n.path("reason").asText("raised before the daemon restarted")));
        }
        return out;
    }

    /** Forgets everything of a removed job. */
    public void forget(String job) {
        Path d = dir.resolve(job);
        try (var files = Files.list(d)) {
            files.forEach(ChangeJournal::delete);
            Files.deleteIfExists(d);
        } catch (java.nio.file.NoSuchFileException e) {
            // nothing kept
        } catch (IOException e) {
            LOG.warn("the kept changes of job {} not removed: {}", job, e.toString());
        }
    }

    private List<JsonNode> read(boolean stopFiles) {
        List<JsonNode> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (var jobs = Files.list(dir)) {
            for (Path j : jobs.sorted().toList()) {
                try (var files = Files.list(j)) {
                    for (Path f : files.sorted().toList()) {
                        String name = f.getFileName().toString();
                        if (name.endsWith(".json") && name.equals("stop.json") == stopFiles) {
                            try {
                                out.add(JSON.readTree(f.toFile()));
                            } catch (IOException e) {
                                LOG.warn("kept change {} unreadable, skipped: {}", f, e.toString());
                            }
                        }
                    }
                }
            }
        } catch (IOException e) {
            LOG.warn("kept changes under {} unreadable: {}", dir, e.toString());
        }
        return out;
    }

    /** Writes {@code n} to {@code f} whole or not at all (a temporary file, forced, then moved over it). */
    private static void write(Path f, JsonNode n) {
        try {
            Files.createDirectories(f.getParent());
            Path tmp = f.resolveSibling(f.getFileName() + ".tmp");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ch.write(java.nio.ByteBuffer.wrap(JSON.writeValueAsString(n).getBytes(StandardCharsets.UTF_8)));
                ch.force(true);
            }
            Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            if (io.tenplex.jobs.durable.DiskFull.is(e)) { // 507: the request is refused before anything is raised
                throw new io.tenplex.store.StoreException(io.tenplex.store.StoreException.Kind.INSUFFICIENT_STORAGE,
                        "no space left to keep " + f + " in the checkpoint directory (" + e.getMessage() + "): nothing "
                        + "was raised or changed; free space there and ask again");
            }
            throw new java.io.UncheckedIOException("cannot keep " + f + " in the checkpoint directory: " + e.getMessage(), e);
        }
    }

    private static void delete(Path f) {
        try {
            Files.deleteIfExists(f);
        } catch (IOException e) {
            LOG.warn("{} not removed: {}", f, e.toString());
        }
    }
}
