package io.tenplex.jobs.generations;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Supplier;

/**
 * The files that describe a job's generations in the store: the file naming the current complete
 * generation ({@code /job/<job>/generation}), each generation's {@code generation.json} (its step,
 * world and configuration), and the manifests of its ranks.
 */
final class GenerationFiles {
    /** Its warning is logged as the generations' (as before). */
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Generations.class);

    private final TensorStore store;
    private final ObjectMapper json = new ObjectMapper();

    GenerationFiles(TensorStore store) {
        this.store = store;
    }

    private static StorePath currentFile(String job) {
        return new JobLayout(job).currentGeneration();
    }

    /**
     * The step the current-generation file names, if any; when it holds something else (it was changed
     * behind the daemon's back), {@code newestKnown}: the newest complete generation known here.
     */
    OptionalLong current(String job, Supplier<OptionalLong> newestKnown) {
        Optional<String> text = SmallFiles.read(store, currentFile(job));
        if (text.isEmpty()) {
            return OptionalLong.empty();
        }
        OptionalLong step = JobLayout.step(text.get().strip());
        if (step.isPresent()) {
            return step;
        }
        OptionalLong known = newestKnown.get(); // the file was changed behind the daemon's back
        LOG.warn("job={}: {} holds '{}', not a step; the newest complete generation known here is {}", job,
                currentFile(job), text.get().strip(), known);
        return known;
    }

    /** Names {@code step} the job's current generation. */
    void setCurrent(String job, long step) {
        SmallFiles.put(store, currentFile(job), Long.toString(step));
    }

    /** Writes the {@code generation.json} of a step: its step, world and configuration (if any). */
    void writeGeneration(String job, long step, GenerationProgress p) throws IOException {
        ObjectNode g = json.createObjectNode();
        g.put("step", step);
        g.put("world", p.world);
        if (p.config != null) {
            g.set("config", p.config);
        }
        store.mkdirs(Generations.generationDir(job, step));
        SmallFiles.put(store, Generations.generationDir(job, step).child("generation.json"),
                json.writerWithDefaultPrettyPrinter().writeValueAsString(g));
    }

    /** The {@code generation.json} of a complete generation. */
    JsonNode generationJson(String job, long step) throws IOException {
        return json.readTree(SmallFiles.read(store, Generations.generationDir(job, step).child("generation.json"))
                .orElseThrow(() -> StoreException.notFound("no complete generation " + step + " of job " + job
                        + " on this daemon")));
    }

    /** Where the manifest of a rank of a generation is. */
    static StorePath manifest(String job, long step, int rank) {
        return Generations.generationDir(job, step).child("manifests").child(rank + ".json");
    }

    /** Writes a rank's manifest at {@code manifest}. */
    void writeManifest(StorePath manifest, SealManifest m) throws IOException {
        SmallFiles.put(store, manifest, json.writerWithDefaultPrettyPrinter().writeValueAsString(m));
    }
}
