package io.tenplex.server;

import io.netty.handler.codec.http.HttpMethod;
import io.tenplex.store.StorePath;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One row of the route table: the paths it takes, its metric label (a fixed vocabulary that names
 * the route in logs and metrics), the methods it serves with their endpoints, and whether it needs
 * the bearer token. Built once, then read by any connection.
 */
final class Route {
    /** How a route's path is compared with a request's. */
    private enum Match {
        /** One of the paths exactly. */
        EXACT,
        /** The path, or the path followed by {@code /} and more (the rest is a store path). */
        STORE,
        /** Any request path that starts with the path. */
        PREFIX
    }

    /** Methods that change nothing; any other on a store path is refused where the daemon owns it. */
    private static final java.util.Set<HttpMethod> READS = java.util.Set.of(HttpMethod.GET, HttpMethod.HEAD,
            HttpMethod.OPTIONS);

    final String label;
    /** The route's name in 405 answers. */
    private final String name;
    private final Match match;
    private final List<String> paths;
    private final Map<HttpMethod, Endpoint> methods = new LinkedHashMap<>();
    private Endpoint any;
    private boolean open;
    private boolean jsonErrors;

    private Route(String label, String name, Match match, List<String> paths) {
        this.label = label;
        this.name = name;
        this.match = match;
        this.paths = paths;
    }

    /** A route for exactly these paths; 405 answers name the first. */
    static Route exact(String label, String... paths) {
        return new Route(label, paths[0], Match.EXACT, List.of(paths));
    }

    /** {@code /api/v1/<resource>} followed by a store path, which the endpoints get parsed. */
    static Route store(String resource) {
        String p = ApiRoutes.PREFIX + resource;
        return new Route(resource, p, Match.STORE, List.of(p)).jsonErrors();
    }

    /** Every path that starts with {@code prefix}. */
    static Route prefix(String label, String prefix) {
        return new Route(label, prefix, Match.PREFIX, List.of(prefix));
    }

    /** Serves {@code ms} with {@code e}; the order of calls is the order of the {@code Allow} header. */
    Route on(Endpoint e, HttpMethod... ms) {
        for (HttpMethod m : ms) {
            methods.put(m, e);
        }
        return this;
    }

    /** Serves every method with {@code e}. */
    Route any(Endpoint e) {
        this.any = e;
        return this;
    }

    /** Needs no bearer token. */
    Route open() {
        this.open = true;
        return this;
    }

    boolean isOpen() {
        return open;
    }

    /** Answers errors with a JSON body {@code {"error", "code"}} (else one line of text). */
    Route jsonErrors() {
        this.jsonErrors = true;
        return this;
    }

    boolean hasJsonErrors() {
        return jsonErrors;
    }

    boolean matches(String path) {
        return switch (match) {
            case EXACT -> paths.contains(path);
            case STORE -> path.equals(paths.get(0)) || path.startsWith(paths.get(0) + "/");
            case PREFIX -> path.startsWith(paths.get(0));
        };
    }

    /** The request's call: a store route's path is parsed first (400), then the method checked (405). */
    Call call(Exchange ex) throws Exception {
        StorePath target = null;
        if (match == Match.STORE) {
            String rest = ex.query.path().substring(paths.get(0).length());
            target = StorePath.parse(rest.isEmpty() ? "/" : rest);
        }
        Endpoint e = any != null ? any : methods.get(ex.method());
        if (e == null) {
            throw HttpError.methodNotAllowed(ex.method().name(), name, allow());
        }
        if (target != null && !READS.contains(ex.method())) {
            DaemonOwned.check(target);
        }
        return e.call(ex, target);
    }

    private String allow() {
        return methods.keySet().stream().map(HttpMethod::name).collect(Collectors.joining(", "));
    }
}
