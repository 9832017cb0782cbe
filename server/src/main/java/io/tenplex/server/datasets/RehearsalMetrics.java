package io.tenplex.server.datasets;

import io.prometheus.client.Collector;
import io.prometheus.client.CounterMetricFamily;
import io.prometheus.client.GaugeMetricFamily;
import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.datasets.rehearsal.RehearsalService.RankMetrics;
import io.tenplex.datasets.rehearsal.RehearsalStats;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * The rehearsal buffers held here in {@code /metrics}, labelled by job and rank: representatives per
 * class and in all, their bytes, candidates inserted and those that replaced one, draws, the
 * representatives they answered and their latency (a histogram), bytes fetched from other daemons (for
 * draws and re-partitions), and the trainers' augments that waited for their draw, and for how long.
 */
public final class RehearsalMetrics extends Collector {
    private static final List<String> LABELS = List.of("job", "rank");

    private final RehearsalService service;

    public RehearsalMetrics(RehearsalService service) {
        this.service = service;
    }

    @Override
    public List<MetricFamilySamples> collect() {
        List<RankMetrics> all = service.metrics();
        List<MetricFamilySamples> out = new ArrayList<>();
        out.add(perClass(all));
        out.add(gauge(all, "tenplex_rehearsal_representatives", "Representatives a rank's buffer holds here",
                m -> java.util.Arrays.stream(m.counts()).sum()));
        out.add(gauge(all, "tenplex_rehearsal_bytes", "Bytes of the representatives a rank's buffer holds here",
                RankMetrics::bytes));
        out.add(counter(all, "tenplex_rehearsal_inserts", "Candidates appended to a class memory", s -> s.inserts()));
        out.add(counter(all, "tenplex_rehearsal_replacements", "Candidates that replaced a random representative",
                s -> s.replacements()));
        out.add(counter(all, "tenplex_rehearsal_draws", "Draws of representatives for a rank", s -> s.draws()));
        out.add(counter(all, "tenplex_rehearsal_drawn", "Representatives answered by draws", s -> s.drawn()));
        out.add(drawSeconds(all));
        out.add(fetched(all));
        out.add(counter(all, "tenplex_rehearsal_augments", "Augments the trainer reported", s -> s.augments()));
        out.add(counter(all, "tenplex_rehearsal_augment_waits", "Augments that waited for their draw",
                s -> s.augmentWaits()));
        out.add(counter(all, "tenplex_rehearsal_augment_wait_seconds", "Time augments waited for their draw",
                s -> s.augmentWaitSeconds()));
        return out;
    }

    private static GaugeMetricFamily perClass(List<RankMetrics> all) {
        GaugeMetricFamily g = new GaugeMetricFamily("tenplex_rehearsal_class_representatives",
                "Representatives of a class in a rank's buffer here", List.of("job", "rank", "class"));
        for (RankMetrics m : all) {
            for (int c = 0; c < m.counts().length; c++) {
                g.addMetric(List.of(m.job(), Integer.toString(m.rank()), Integer.toString(c)), m.counts()[c]);
            }
        }
        return g;
    }

    private static GaugeMetricFamily gauge(List<RankMetrics> all, String name, String help,
            ToDoubleFunction<RankMetrics> f) {
        GaugeMetricFamily g = new GaugeMetricFamily(name, help, LABELS);
        all.forEach(m -> g.addMetric(labels(m), f.applyAsDouble(m)));
        return g;
    }

    private static CounterMetricFamily counter(List<RankMetrics> all, String name, String help,
            ToDoubleFunction<RehearsalStats.Snapshot> f) {
        CounterMetricFamily c = new CounterMetricFamily(name, help, LABELS);
        all.forEach(m -> c.addMetric(labels(m), f.applyAsDouble(m.stats())));
        return c;
    }

    private static CounterMetricFamily fetched(List<RankMetrics> all) {
        CounterMetricFamily c = new CounterMetricFamily("tenplex_rehearsal_fetched_bytes",
                "Bytes of representatives fetched from other daemons, for draws or a re-partition",
                List.of("job", "rank", "purpose"));
        for (RankMetrics m : all) {
            String rank = Integer.toString(m.rank());
            c.addMetric(List.of(m.job(), rank, "draw"), m.stats().fetchedForDraws());
            c.addMetric(List.of(m.job(), rank, "repartition"), m.stats().fetchedForMoves());
        }
        return c;
    }

    private static MetricFamilySamples drawSeconds(List<RankMetrics> all) {
        String name = "tenplex_rehearsal_draw_seconds";
        List<String> bucketLabels = List.of("job", "rank", "le");
        List<MetricFamilySamples.Sample> samples = new ArrayList<>();
        for (RankMetrics m : all) {
            RehearsalStats.Snapshot s = m.stats();
            long[] buckets = s.drawBuckets();
            for (int i = 0; i < buckets.length; i++) {
                String le = i < RehearsalStats.DRAW_BUCKETS.length ? doubleToGoString(RehearsalStats.DRAW_BUCKETS[i])
                        : "+Inf";
                samples.add(new MetricFamilySamples.Sample(name + "_bucket", bucketLabels,
                        List.of(m.job(), Integer.toString(m.rank()), le), buckets[i]));
            }
            samples.add(new MetricFamilySamples.Sample(name + "_count", LABELS, labels(m), s.draws()));
            samples.add(new MetricFamilySamples.Sample(name + "_sum", LABELS, labels(m), s.drawSeconds()));
        }
        return new MetricFamilySamples(name, Type.HISTOGRAM, "Time from a draw's request to its representatives",
                samples);
    }

    private static List<String> labels(RankMetrics m) {
        return List.of(m.job(), Integer.toString(m.rank()));
    }
}
