package io.tenplex.server;

import io.prometheus.client.Collector;
import io.prometheus.client.CollectorRegistry;
import io.prometheus.client.Counter;
import io.prometheus.client.GaugeMetricFamily;
import io.prometheus.client.Histogram;
import io.prometheus.client.exporter.common.TextFormat;
import io.prometheus.client.hotspot.DefaultExports;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Prometheus metrics of one daemon: requests, latencies, bytes in and out, and what the store holds;
 * a scrape also serves the process's default registry (jobs, datasets, FUSE, JVM).
 */
public final class RestMetrics {
    static final String CONTENT_TYPE = TextFormat.CONTENT_TYPE_004;

    private final CollectorRegistry registry = new CollectorRegistry();
    private final Counter requests = Counter.build("tenplex_http_requests_total", "HTTP requests answered")
            .labelNames("route", "method", "status").register(registry);
    private final Histogram latency = Histogram.build("tenplex_http_request_duration_seconds",
            "Time from request head to the last response byte").labelNames("route")
            .buckets(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30).register(registry);
    private final Counter served = Counter.build("tenplex_http_served_bytes_total", "Body bytes sent")
            .register(registry);
    private final Counter received = Counter.build("tenplex_http_received_bytes_total", "Body bytes received")
            .register(registry);
    private final Counter landed = Counter.build("tenplex_http_landed_bytes_total",
            "Upload body bytes the socket read straight into their blob (no copy)").register(registry);

    public RestMetrics(TensorStore store) {
        DefaultExports.initialize(); // the JVM's memory (heap and direct buffers), GC and threads, once per process
        new Collector() {
            @Override
            public List<MetricFamilySamples> collect() {
                long[] t = store.totals();
                return List.of(
                        gauge("tenplex_store_used_bytes", "Bytes allocated for tensors and files",
                                store.allocator().usedBytes()),
                        gauge("tenplex_store_budget_bytes", "Memory budget", store.allocator().budget()),
                        gauge("tenplex_store_pooled_bytes", "Freed memory kept for reuse (chunks, shared-memory segments; not used)",
                                store.allocator().pooledBytes()),
                        gauge("tenplex_store_tensor_bytes", "Bytes of tensor data", t[2]),
                        gauge("tenplex_store_tensors", "Tensors stored", t[0]),
                        gauge("tenplex_store_files", "Files stored", t[1]),
                        gauge("tenplex_store_nodes", "Directories and entries in the store's tree (heap they hold)", t[3]),
                        gauge("tenplex_store_nodes_limit", "The most directories and entries the heap has room for",
                                t[4]));
            }
        }.register(registry);
    }

    /** Adds another module's collector (e.g. the streamed-sample buffers) to what {@code /metrics} shows. */
    public void register(Collector collector) {
        collector.register(registry);
    }

    private static GaugeMetricFamily gauge(String name, String help, double v) {
        return new GaugeMetricFamily(name, help, v);
    }

    void served(long bytes) {
        served.inc(bytes);
    }

    void received(long bytes) {
        received.inc(bytes);
    }

    void landed(long bytes) {
        landed.inc(bytes);
    }

    void record(Exchange ex) {
        String status = ex.status() == null ? "none" : Integer.toString(ex.status().code());
        requests.labels(ex.route, methodLabel(ex.method().name()), status).inc();
        latency.labels(ex.route).observe((System.nanoTime() - ex.startNanos) / 1e9);
    }

    /** Methods are labels only when they are ones we serve: any other name is "other" (bounded labels). */
    static String methodLabel(String method) {
        return switch (method) {
            case "GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS" -> method;
            default -> "other";
        };
    }

    byte[] scrape() {
        StringWriter w = new StringWriter();
        try {
            TextFormat.write004(w, registry.metricFamilySamples());
            // the lifecycle's, datasets', FUSE's and the JVM's metrics: registered once per process
            TextFormat.write004(w, CollectorRegistry.defaultRegistry.metricFamilySamples());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return w.toString().getBytes(StandardCharsets.UTF_8);
    }
}
