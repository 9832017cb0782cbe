package io.tenplex.server;

import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.store.StorePath;
import java.util.Map;

/** Maps a request to its call. Route labels (a fixed vocabulary) name routes in logs and metrics. */
final class Router {
    private final java.util.Map<String, ControlHandler> controls = new java.util.concurrent.ConcurrentHashMap<>();

    void addControl(String prefix, ControlHandler handler) {
        controls.put(prefix, handler);
    }

    static String routeLabel(String path) {
        return switch (path) {
            case "/upload", "/upload1" -> "upload";
            case "/query" -> "query";
            case "/delete", "/delete1" -> "delete";
            case "/metrics" -> "metrics";
            case "/api/v1/health" -> "health";
            default -> {
                if (path.startsWith(ApiRoutes.PREFIX)) {
                    String rest = path.substring(ApiRoutes.PREFIX.length());
                    int slash = rest.indexOf('/');
                    String res = slash < 0 ? rest : rest.substring(0, slash);
                    yield switch (res) {
                        case "tensors", "files", "dirs", "stat", "checksums", "jobs" -> res;
                        default -> "unknown";
                    };
                }
                yield "unknown";
            }
        };
    }

    Call route(Exchange ex) {
        String path = ex.query.path();
        switch (path) {
            case "/upload", "/upload1":
                return CompatRoutes.upload(ex);
            case "/query":
                return CompatRoutes.query(ex);
            case "/delete", "/delete1":
                return CompatRoutes.delete(ex);
            case "/metrics":
                requireGet(ex, path);
                return Call.of(e -> e.respond(HttpResponseStatus.OK, RestMetrics.CONTENT_TYPE, e.rc.metrics().scrape(),
                        null));
            case "/api/v1/health":
                requireGet(ex, path);
                return Call.of(e -> e.respondJson(HttpResponseStatus.OK, Map.of("status", "ok")));
            default:
                break;
        }
        for (java.util.Map.Entry<String, ControlHandler> c : controls.entrySet()) {
            if (path.startsWith(c.getKey())) {
                return new ControlCall(c.getValue());
            }
        }
        if (path.startsWith(ApiRoutes.PREFIX)) {
            String rest = path.substring(ApiRoutes.PREFIX.length());
            int slash = rest.indexOf('/');
            String resource = slash < 0 ? rest : rest.substring(0, slash);
            StorePath target = StorePath.parse(slash < 0 ? "/" : rest.substring(slash));
            return ApiRoutes.route(ex, resource, target);
        }
        throw new HttpError(HttpResponseStatus.NOT_FOUND, "no route for " + ex.method() + " " + path);
    }

    private static void requireGet(Exchange ex, String path) {
        if (!ex.method().equals(HttpMethod.GET) && !ex.method().equals(HttpMethod.HEAD)) {
            throw HttpError.methodNotAllowed(ex.method().name(), path, "GET, HEAD");
        }
    }
}
