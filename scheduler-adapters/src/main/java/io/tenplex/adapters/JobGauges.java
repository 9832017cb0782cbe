package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import io.prometheus.client.Collector;
import io.prometheus.client.GaugeMetricFamily;
import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.RankActivity;
import io.tenplex.jobs.generations.Generations;
import java.io.IOException;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The per-job gauges of {@code /metrics}, built at each scrape from the daemon's live state, one series
 * (set) per job the daemon knows now ({@link Jobs#knownJobs()}): a removed job's series are gone at the
 * next scrape, and no label carries a step. The job's step, its newest complete generation with that
 * generation's world size and parallelism, whether a resource change is pending and its state
 * ({@link JobStates}). A scrape reads memory only and never throws: a job removed while it runs is left out.
 */
public final class JobGauges extends Collector {
    private static final Logger LOG = LoggerFactory.getLogger(JobGauges.class);
    private static final List<String> JOB = List.of("job");
    /** The dimensions of a configuration, as the {@code dim} label and the configuration's JSON fields. */
    static final List<String> DIMS = List.of("tp", "pp", "dp");

    private final Jobs jobs;
    private final ResourceChanges changes;
    private final LongSupplier clock;

    public JobGauges(Jobs jobs, ResourceChanges changes) {
        this(jobs, changes, System::nanoTime);
    }

    /** @param clock {@link System#nanoTime()} outside tests */
    JobGauges(Jobs jobs, ResourceChanges changes, LongSupplier clock) {
        this.jobs = jobs;
        this.changes = changes;
        this.clock = clock;
    }

    /** One job's values; {@code world} 0 and {@code dims} empty when it has no complete generation. */
    record JobView(String job, long step, long generation, int world, Map<String, Integer> dims, String state) {
    }

    @Override
    public List<MetricFamilySamples> collect() {
        GaugeMetricFamily step = new GaugeMetricFamily("tenplex_job_step", "The most steps a rank of the job said it "
                + "finished (stop-flag reads with step) or saved, whichever is larger; -1 while none", JOB);
        GaugeMetricFamily generation = new GaugeMetricFamily("tenplex_job_generation", "The job's newest complete "
                + "generation (its step); -1 while it has none", JOB);
        GaugeMetricFamily world = new GaugeMetricFamily("tenplex_job_world_size", "Ranks of the job's newest complete "
                + "generation; absent while it has none", JOB);
        GaugeMetricFamily parallelism = new GaugeMetricFamily("tenplex_job_parallelism", "The tp, pp and dp of the "
                + "configuration of the job's newest complete generation; absent while none or saved without one",
                List.of("job", "dim"));
        GaugeMetricFamily pending = new GaugeMetricFamily("tenplex_job_change_pending", "1 while a resource change "
                + "stops or reconfigures the job (state stopping or reconfiguring), else 0", JOB);
        GaugeMetricFamily state = new GaugeMetricFamily("tenplex_job_state", "1 for the job's state, 0 for the others: "
                + String.join(", ", JobStates.NAMES), List.of("job", "state"));
        long now = clock.getAsLong();
        for (String job : known()) {
            JobView v = view(job, now);
            if (v == null) {
                continue;
            }
            step.addMetric(List.of(job), v.step());
            generation.addMetric(List.of(job), v.generation());
            if (v.world() > 0) {
                world.addMetric(List.of(job), v.world());
            }
            v.dims().forEach((dim, n) -> parallelism.addMetric(List.of(job, dim), n));
            pending.addMetric(List.of(job), JobStates.pending(v.state()) ? 1 : 0);
            for (String s : JobStates.NAMES) {
                state.addMetric(List.of(job, s), s.equals(v.state()) ? 1 : 0);
            }
        }
        return List.of(step, generation, world, parallelism, pending, state);
    }

    /** The jobs known now (none when they cannot be listed: a scrape never fails). */
    private SortedSet<String> known() {
        try {
            return jobs.knownJobs();
        } catch (RuntimeException e) {
            LOG.debug("job gauges: the jobs could not be listed: {}", e.toString());
            return new TreeSet<>();
        }
    }

    /** The job's values, or null when it went away while they were read. */
    private JobView view(String job, long now) {
        try {
            Generations g = jobs.generations();
            RankActivity.Seen seen = jobs.stopFlags().activity().of(job).orElse(null);
            OptionalLong current = g.current(job);
            long newest = current.orElse(-1);
            int ranks = 0;
            Map<String, Integer> dims = Map.of();
            if (current.isPresent()) {
                ranks = g.world(job, newest);
                dims = dims(g.config(job, newest));
            }
            long step = Math.max(newest, seen == null ? -1 : seen.highestStep());
            String s = JobStates.of(lastChange(job), jobs.stopFlags().flag(job).isPresent(), jobs.running(job), seen, now);
            return new JobView(job, step, newest, ranks, dims, s);
        } catch (IOException | RuntimeException e) {
            LOG.debug("job gauges: job={} left out of this scrape: {}", job, e.toString());
            return null;
        }
    }

    /** The job's running resource change, else the one that ended last (null: none kept). */
    private JobStates.LastChange lastChange(String job) {
        return changes.of(job).stream().map(JobStates.LastChange::of)
                .max(Comparator.comparingLong(c -> c.endedNanos() == 0 ? Long.MAX_VALUE : c.endedNanos()))
                .orElse(null);
    }

    /** {@code tp}, {@code pp}, {@code dp} of a generation's configuration (empty: none, or one not a positive int). */
    static Map<String, Integer> dims(JsonNode config) {
        if (config == null || !config.isObject()) {
            return Map.of();
        }
        Map<String, Integer> out = new java.util.LinkedHashMap<>();
        for (String dim : DIMS) {
            JsonNode n = config.path(dim);
            if (!n.canConvertToInt() || !n.isIntegralNumber() || n.asInt() < 1) {
                return Map.of();
            }
            out.put(dim, n.asInt());
        }
        return out;
    }
}
