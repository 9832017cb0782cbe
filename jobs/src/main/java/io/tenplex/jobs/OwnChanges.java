package io.tenplex.jobs;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.jobs.reconfigure.Descriptions;
import io.tenplex.jobs.reconfigure.LocalParts;
import io.tenplex.jobs.reconfigure.LocalTrees;
import io.tenplex.jobs.reconfigure.OwnPartsAhead;
import io.tenplex.jobs.reconfigure.PartRunner;
import io.tenplex.jobs.reconfigure.PostedChanges;
import io.tenplex.jobs.reconfigure.ValueDigests;
import io.tenplex.store.TensorStore;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * A daemon's side of the changes every daemon plans its own part of (docs/ARCHITECTURE.md, "Every
 * daemon plans its own part"): the descriptions it keeps by digest, the changes posted to it, its own
 * parts planned ahead, and the checks of its own old ranks' saved trees and values.
 */
public final class OwnChanges {
    private final TensorStore store;
    private final Function<PlanPart, PartRunner> startPart;
    private final BiFunction<String, String, io.tenplex.jobs.common.PartStatus> knownPart;
    private final Descriptions descriptions = new Descriptions();
    private final PostedChanges posted = new PostedChanges();
    private final OwnPartsAhead partsAhead = new OwnPartsAhead();

    OwnChanges(TensorStore store, Function<PlanPart, PartRunner> startPart,
            BiFunction<String, String, io.tenplex.jobs.common.PartStatus> knownPart) {
        this.store = store;
        this.startPart = startPart;
        this.knownPart = knownPart;
    }

    /**
     * Plans and starts this daemon's part of a change it was given the definition of
     * ({@link LocalParts}), as {@code worker}; or answers the descriptions it lacks.
     */
    public DaemonClient.ChangeAnswer start(ChangeSpec spec, int worker) {
        return LocalParts.start(spec, descriptions, posted, partsAhead, worker, p -> startPart.apply(p).status(),
                () -> knownPart.apply(spec.job(), spec.changeId()));
    }

    /**
     * Plans this daemon's own part of a change ahead of it (as {@code worker}), kept for the change
     * ({@link OwnPartsAhead}); nothing is started. Answers the plan digest, or the descriptions this
     * daemon lacks.
     */
    public DaemonClient.ChangeAnswer planAhead(ChangeSpec spec, int worker) {
        return LocalParts.planAhead(spec, descriptions::get, worker, partsAhead);
    }

    /** This daemon's own parts planned ahead of their changes. */
    public OwnPartsAhead partsAhead() {
        return partsAhead;
    }

    /** This daemon's own old ranks' saved trees, checked: a layout digest per rank ({@link LocalTrees}). */
    public Map<Integer, String> describeTrees(String job, String sourceDir, List<Integer> ranks) {
        return LocalTrees.describe(store, new JobLayout(job, sourceDir, "load"), ranks, descriptions);
    }

    /** Digests of saved values of this daemon's own old ranks ({@link ValueDigests}): rank -> (path -> digest). */
    public Map<Integer, Map<String, String>> digestValues(String job, String sourceDir, Map<Integer, List<String>> values) {
        return ValueDigests.digest(store, new JobLayout(job, sourceDir, "load"), values);
    }

    /** The descriptions (models, saved layouts, workers' addresses) changes name by digest, as this daemon keeps them. */
    public Descriptions descriptions() {
        return descriptions;
    }
}
