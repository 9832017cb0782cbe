package io.tenplex.server;

import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The route table: the compatibility and service routes, then the control routes other modules
 * add, then the store routes under {@code /api/v1}. Dispatch and metric labels both come from it;
 * a path no route takes is labelled {@code not_found} (it is answered 404), a request the decoder
 * refuses {@code malformed}.
 */
final class Router {
    static final String UNKNOWN = "not_found";
    static final String MALFORMED = "malformed";

    private final List<Route> first = List.of(CompatRoutes.upload(), CompatRoutes.query(), CompatRoutes.delete(),
            ServiceRoutes.metrics(), ServiceRoutes.health());
    private final List<Route> controls = new CopyOnWriteArrayList<>();
    private final List<Route> last = List.of(TensorRoutes.route(), FileRoutes.route(), DirRoutes.route(),
            StatRoutes.stat(), StatRoutes.checksums(), ApiRoutes.unknownResource());

    /** Adds a control route labelled {@code label}; earlier additions match first. */
    void addControl(String prefix, String label, ControlHandler handler) {
        controls.add(Route.prefix(label, prefix).any((ex, target) -> new ControlCall(handler)));
    }

    /** The label of a control prefix: its last segment ({@code /api/v1/jobs/} is {@code jobs}). */
    static String labelOf(String prefix) {
        String p = prefix.endsWith("/") ? prefix.substring(0, prefix.length() - 1) : prefix;
        String last = p.substring(p.lastIndexOf('/') + 1);
        return last.isEmpty() ? UNKNOWN : last;
    }

    /** The route that takes {@code path}, or null. */
    Route find(String path) {
        for (List<Route> group : List.of(first, controls, last)) {
            for (Route r : group) {
                if (r.matches(path)) {
                    return r;
                }
            }
        }
        return null;
    }

    /** The call of a request to {@code route} (null: no route, 404). */
    static Call call(Exchange ex, Route route) throws Exception {
        if (route == null) {
            throw new HttpError(HttpResponseStatus.NOT_FOUND, "no route for " + ex.method() + " " + ex.query.path());
        }
        return route.call(ex);
    }
}
