package io.tenplex.server.streams;

import io.prometheus.client.Collector;
import io.prometheus.client.GaugeMetricFamily;
import io.tenplex.datasets.streams.RankStatus;
import io.tenplex.datasets.streams.StreamService;
import io.tenplex.datasets.streams.StreamStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The streamed-sample buffers held here in {@code /metrics}, labelled by job and rank: population,
 * seen and unseen samples, pushes, samples delivered in batches, batches, evictions, refused pushes,
 * pushes and reads withdrawn, waiting producers, and how many batches samples were in
 * ({@code reads} bucket; held and departed).
 */
public final class StreamMetrics extends Collector {
    private static final List<String> LABELS = List.of("job", "rank", "policy");

    private final StreamService streams;

    public StreamMetrics(StreamService streams) {
        this.streams = streams;
    }

    @Override
    public List<MetricFamilySamples> collect() {
        List<StreamStatus> all = streams.all();
        List<MetricFamilySamples> out = new ArrayList<>();
        out.add(gauge(all, "tenplex_stream_population", "Samples held by a rank's training buffer",
                RankStatus::population));
        out.add(gauge(all, "tenplex_stream_seen", "Held samples already in a batch", RankStatus::seen));
        out.add(gauge(all, "tenplex_stream_unseen", "Held samples not yet in a batch", RankStatus::unseen));
        out.add(gauge(all, "tenplex_stream_pushed_total", "Samples accepted", RankStatus::pushed));
        out.add(gauge(all, "tenplex_stream_delivered_total", "Samples put into batches", RankStatus::delivered));
        out.add(gauge(all, "tenplex_stream_batches_total", "Batches read", RankStatus::batches));
        out.add(gauge(all, "tenplex_stream_evicted_total", "Seen samples evicted", RankStatus::evicted));
        out.add(gauge(all, "tenplex_stream_refused_total", "Pushes refused while full (retried)",
                RankStatus::refused));
        out.add(gauge(all, "tenplex_stream_withdrawn_total", "Waiting pushes and reads withdrawn: their client went away",
                RankStatus::withdrawn));
        out.add(gauge(all, "tenplex_stream_waiting_producers", "Pushes waiting for room",
                RankStatus::waitingProducers));
        out.add(reads(all));
        GaugeMetricFamily memory = new GaugeMetricFamily("tenplex_stream_memory_bytes",
                "This daemon's budget for streamed sample bytes (heap), and the bytes held", List.of("kind"));
        memory.addMetric(List.of("budget"), streams.memory().budget());
        memory.addMetric(List.of("used"), streams.memory().used());
        out.add(memory);
        return out;
    }

    private static GaugeMetricFamily gauge(List<StreamStatus> all, String name, String help,
            ToDoubleFunction<RankStatus> f) {
        GaugeMetricFamily g = new GaugeMetricFamily(name, help, LABELS);
        for (StreamStatus s : all) {
            for (RankStatus r : s.local()) {
                g.addMetric(List.of(s.job(), Integer.toString(r.rank()), r.policy()), f.applyAsDouble(r));
            }
        }
        return g;
    }

    private static GaugeMetricFamily reads(List<StreamStatus> all) {
        GaugeMetricFamily g = new GaugeMetricFamily("tenplex_stream_sample_reads",
                "Samples by how many batches they were in (where: held or left the buffer)",
                List.of("job", "rank", "where", "reads"));
        for (StreamStatus s : all) {
            for (RankStatus r : s.local()) {
                add(g, s.job(), r.rank(), "held", r.readsHeld());
                add(g, s.job(), r.rank(), "left", r.readsLeft());
            }
        }
        return g;
    }

    private static void add(GaugeMetricFamily g, String job, int rank, String where, Map<String, Long> counts) {
        counts.forEach((reads, n) -> g.addMetric(List.of(job, Integer.toString(rank), where, reads), n));
    }
}
