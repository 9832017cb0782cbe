package io.tenplex.server;

import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.DeleteCounts;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The prototype's routes, exactly as its clients send them (see the wire protocol document):
 * {@code POST /upload} dispatched on the Content-Type (and, beyond the prototype, compact batches:
 * {@link BatchUpload}), {@code GET /query} with tensor, directory and
 * prefix-lookup forms, {@code DELETE /delete}. Unlike the prototype, bad input gets a 4xx with a
 * reason instead of a dropped connection, and existing files are not silently kept (409).
 */
final class CompatRoutes {
    private CompatRoutes() {
    }

    static Route upload() {
        return Route.exact("upload", "/upload", "/upload1").on((ex, target) -> upload(ex), HttpMethod.POST,
                HttpMethod.PUT);
    }

    static Route query() {
        return Route.exact("query", "/query").on((ex, target) -> query(ex), HttpMethod.GET, HttpMethod.HEAD,
                HttpMethod.POST);
    }

    static Route delete() {
        return Route.exact("delete", "/delete", "/delete1").on((ex, target) -> delete(ex), HttpMethod.DELETE);
    }

    private static Call upload(Exchange ex) {
        String ct = Uploads.contentType(ex);
        boolean replace = Uploads.replaceRequested(ex);
        if (ct.equals("application/x-tar") || ct.equals(BatchUpload.CONTENT_TYPE)) {
            String prefix = ex.param("prefix");
            StorePath under = StorePath.parse(prefix == null ? "/" : prefix);
            DaemonOwned.check(under);
            // each entry's path is checked too
            return ct.equals(BatchUpload.CONTENT_TYPE) ? new BatchUpload(under, replace) : new TarUpload(under, replace);
        }
        StorePath path = StorePath.parse(ex.requireParam("path"));
        DaemonOwned.check(path);
        if (ct.equals("x-tensor")) {
            TensorMeta meta = new TensorMeta(DType.fromName(ex.requireParam("dtype")), Shape.parse(ex.param("dims")));
            return new Uploads.TensorUpload(path, meta, replace, Uploads.EMPTY_OK);
        }
        return new Uploads.FileUpload(path, replace, Uploads.EMPTY_OK);
    }

    private static Call query(Exchange ex) {
        String ct = Uploads.contentType(ex);
        String rawPath = ex.requireParam("path");
        StorePath path = StorePath.parse(rawPath);
        String range = ex.param("range");
        if (ct.equals("x-tensor") || range != null || path.name().endsWith(".numpy.ndarray")) {
            return Downloads.tensor(ex, path, range, false);
        }
        if (ct.equals("x-dir")) {
            return Call.onWork(e -> listFiles(e, path));
        }
        return Call.onWork(e -> lookup(e, path));
    }

    private static Call.Reply listFiles(Exchange ex, StorePath path) {
        List<Entry> files = ex.rc.store().walk(path, true);
        byte[] body = files.stream().map(f -> f.path().toString()).collect(Collectors.joining("\n"))
                .getBytes(StandardCharsets.UTF_8);
        HttpHeaders h = new DefaultHttpHeaders().set("dtype", "txt");
        return e -> e.respond(HttpResponseStatus.OK, "text/plain; charset=utf-8", body, h);
    }

    /**
     * The prototype's lookup: the first entry of the parent directory (creation order, sidecars
     * before their tensors) whose name up to its first dot is the last path component; its type
     * extension comes back in the {@code dtype} header. An exact name match is tried last.
     */
    private static Call.Reply lookup(Exchange ex, StorePath path) {
        if (path.isRoot()) {
            throw HttpError.badRequest("query needs a path below /");
        }
        List<Entry> siblings;
        try {
            siblings = ex.rc.store().list(path.parent(), true);
        } catch (StoreException e) {
            throw StoreException.notFound("node not exist: " + path);
        }
        String want = path.name();
        Entry found = null;
        for (Entry e : siblings) {
            if (e.type() != EntryType.DIR && baseName(e.name()).equals(want)) {
                found = e;
                break;
            }
        }
        if (found == null) {
            found = siblings.stream().filter(e -> e.type() != EntryType.DIR && e.name().equals(want)).findFirst()
                    .orElseThrow(() -> StoreException.notFound("node not exist: " + path));
        }
        String name = found.name();
        int dot = name.indexOf('.');
        String dtype = dot < 0 ? "text" : name.substring(dot + 1);
        DataRef ref = ex.rc.store().open(found.path());
        return e -> Downloads.file(e, ref, new DefaultHttpHeaders().set("dtype", dtype));
    }

    private static String baseName(String name) {
        int dot = name.indexOf('.');
        return dot < 0 ? name : name.substring(0, dot);
    }

    private static Call delete(Exchange ex) {
        StorePath path = StorePath.parse(ex.requireParam("path"));
        DaemonOwned.check(path);
        return Call.onWork(e -> {
            DeleteCounts c;
            try {
                c = e.rc.store().delete(path);
            } catch (StoreException s) {
                if (s.kind() != StoreException.Kind.NOT_FOUND) {
                    throw s;
                }
                HttpHeaders h = new DefaultHttpHeaders().set(Errors.CODE_HEADER, s.code());
                return r -> r.respond(HttpResponseStatus.EXPECTATION_FAILED, "text/plain; charset=utf-8",
                        "node not exist".getBytes(StandardCharsets.US_ASCII), h);
            }
            byte[] wire = c.toWire().getBytes(StandardCharsets.US_ASCII);
            return r -> r.respond(HttpResponseStatus.OK, "text/plain; charset=utf-8", wire, null);
        });
    }
}
