package io.tenplex.jobs.generations;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.TreeSet;

/** What a daemon knows of one step's save: its world, configuration, the ranks sealed anywhere, and whether complete. */
final class GenerationProgress {
    final int world;
    final JsonNode config;
    final TreeSet<Integer> sealed = new TreeSet<>();
    boolean complete;

    GenerationProgress(int world, JsonNode config) {
        this.world = world;
        this.config = config;
    }
}
