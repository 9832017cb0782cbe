package io.tenplex.server;

import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;

/** The daemon's own routes: Prometheus metrics and the health check (which needs no token). */
final class ServiceRoutes {
    private ServiceRoutes() {
    }

    static Route metrics() {
        return Route.exact("metrics", "/metrics").on((ex, target) -> Call.of(e -> e.respond(HttpResponseStatus.OK,
                RestMetrics.CONTENT_TYPE, e.rc.metrics().scrape(), null)), HttpMethod.GET, HttpMethod.HEAD);
    }

    static Route health() {
        return Route.exact("health", "/api/v1/health").open().jsonErrors().on((ex, target) -> Call.of(e -> e.respondJson(
                HttpResponseStatus.OK, Replies.Health.OK)), HttpMethod.GET, HttpMethod.HEAD);
    }
}
