package io.tenplex.jobs.durable;

import io.prometheus.client.Collector;
import io.prometheus.client.CounterMetricFamily;
import io.prometheus.client.GaugeMetricFamily;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The durable tier of one daemon in {@code /metrics}, labelled by job: flushes by outcome
 * ({@code written}, {@code no_space}, {@code failed}), bytes written to packs, durable generations
 * removed to make room on a full disk, and the newest durable step (absent while a job has none).
 */
public final class DurableMetrics extends Collector {
    private static final List<String> JOB = List.of("job");

    private final DurableTier tier;

    public DurableMetrics(DurableTier tier) {
        this.tier = tier;
    }

    @Override
    public List<MetricFamilySamples> collect() {
        Map<String, FlushCounts> all = tier.counts();
        CounterMetricFamily flushes = new CounterMetricFamily("tenplex_durable_flushes",
                "Durable flushes by outcome: written, no_space (the disk or a quota was full after making room), "
                        + "failed (another error)", List.of("job", "outcome"));
        CounterMetricFamily bytes = new CounterMetricFamily("tenplex_durable_written_bytes",
                "Bytes the durable flushes wrote to packs", JOB);
        CounterMetricFamily evicted = new CounterMetricFamily("tenplex_durable_evicted_generations",
                "Older durable generations removed to make room when the disk was full", JOB);
        GaugeMetricFamily newest = new GaugeMetricFamily("tenplex_durable_newest_step",
                "The newest durable generation's step (what a restart resumes from)", JOB);
        all.forEach((job, c) -> {
            flushes.addMetric(List.of(job, "written"), c.written());
            flushes.addMetric(List.of(job, "no_space"), c.noSpace());
            flushes.addMetric(List.of(job, "failed"), c.failed());
            bytes.addMetric(List.of(job), c.bytesWritten());
            evicted.addMetric(List.of(job), c.evicted());
        });
        for (String job : tier.jobs()) {
            tier.newestDurable(job).ifPresent(s -> newest.addMetric(List.of(job), s));
        }
        List<MetricFamilySamples> out = new ArrayList<>();
        out.add(flushes);
        out.add(bytes);
        out.add(evicted);
        out.add(newest);
        return out;
    }
}
