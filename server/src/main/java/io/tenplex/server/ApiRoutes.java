package io.tenplex.server;

import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;

/**
 * What the store routes of the versioned API under {@code /api/v1} share. Paths after the resource
 * name are store paths ({@code /api/v1/tensors/job/a/w} is the tensor {@code /job/a/w}).
 */
final class ApiRoutes {
    static final String PREFIX = "/api/v1/";

    private ApiRoutes() {
    }

    /** Any other {@code /api/v1/<resource>}: its path is checked (400), then a 404 names the resources. */
    static Route unknownResource() {
        return Route.prefix(Router.UNKNOWN, PREFIX).jsonErrors().any((ex, target) -> {
            String rest = ex.query.path().substring(PREFIX.length());
            int slash = rest.indexOf('/');
            StorePath.parse(slash < 0 ? "/" : rest.substring(slash));
            String resource = slash < 0 ? rest : rest.substring(0, slash);
            throw new HttpError(HttpResponseStatus.NOT_FOUND, "no API resource '" + resource
                    + "' (expected tensors, files, dirs, stat, checksums)");
        });
    }

    static Entry stat(Exchange ex, StorePath path) {
        return ex.rc.store().stat(path).orElseThrow(() -> StoreException.notFound("no entry at " + path));
    }

    /** Deletes a file or tensor (on the work executor); another type is refused. */
    static Call deleteTyped(StorePath path, EntryType type) {
        return Call.onWork(e -> {
            Entry en = stat(e, path);
            if (en.type() != type) {
                String m = path + " is a " + en.type().jsonName() + ", not a " + type.jsonName();
                throw en.type() == EntryType.DIR ? StoreException.isADirectory(m)
                        : StoreException.wrongType(StoreException.Kind.CONFLICT, m);
            }
            return Call.json(e, HttpResponseStatus.OK, Replies.Deleted.of(e.rc.store().delete(path)));
        });
    }
}
