package io.tenplex.jobs.reconfigure;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.Optional;

/**
 * The model a job's reconfiguration is planned with: the spec stored with the job, the model inferred
 * from its partition rules and saved shards ({@link InferredModels}), or, for a change of the
 * data-parallel size alone, its saved trees copied whole.
 */
public final class JobModels {
    private final TensorStore store;
    private final InferredModels inferred;

    public JobModels(TensorStore store, InferredModels inferred) {
        this.store = store;
        this.inferred = inferred;
    }

    /** Parses a model spec given with a request and stores it with the job for later reconfigurations. */
    public Model store(String job, String spec) {
        Model m = ModelSpecJson.parse(spec);
        SmallFiles.put(store, new JobLayout(job).modelSpec(), spec); // kept for later reconfigurations
        return m;
    }

    /**
     * @param daemons the daemons of the job (worker to address), where saved trees are listed
     * @param keep whether an inferred model is stored with the job (not by a dry run, which changes nothing)
     * @param to the target configuration, when known: a job with neither spec nor rules is planned as a
     *     whole-tree copy when it and its generation's configuration have T = P = 1
     */
    /** Whether the job has a model spec or partition rules stored (else only a data-parallel change can be planned). */
    public boolean described(String job) {
        return SmallFiles.read(store, new JobLayout(job).modelSpec()).isPresent() || inferred.rules(job).isPresent();
    }

    public Model stored(String job, Map<Integer, InetSocketAddress> daemons, boolean keep, JsonNode to)
            throws IOException {
        Optional<String> spec = SmallFiles.read(store, new JobLayout(job).modelSpec());
        if (spec.isPresent()) {
            return ModelSpecJson.parse(spec.get());
        }
        Optional<io.tenplex.ptc.describe.PartitionRules> stored = inferred.rules(job);
        if (stored.isEmpty() && to != null && InferredModels.dataParallelOnly(to)) {
            try {
                return inferred.wholeTrees(job, daemons); // never stored: a later T or P change must be described
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("listing the saved trees of job " + job);
            }
        }
        io.tenplex.ptc.describe.PartitionRules rules = stored.orElseThrow(() -> new IllegalArgumentException(
                "no model in the request and none stored with job " + job + " (save with spec= or rules=, or post a "
                        + "model; a change of the data-parallel size alone, T = P = 1 before and after, needs none)"));
        Model m;
        try {
            m = inferred.infer(job, rules, daemons);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("inferring the model of job " + job);
        }
        if (keep) {
            SmallFiles.put(store, new JobLayout(job).modelSpec(), ModelSpecJson.write(m)); // later changes reuse it
            ReconfigurationEvents.modelInferred(job, m);
        }
        return m;
    }
}
