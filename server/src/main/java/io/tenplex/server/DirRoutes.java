package io.tenplex.server;

import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;

/**
 * {@code /api/v1/dirs/<path>}: list (or walk with {@code recursive}), create with parents, delete
 * (non-empty only with {@code recursive}). Listings and deletes run on the work executor.
 */
final class DirRoutes {
    private DirRoutes() {
    }

    static Route route() {
        return Route.store("dirs")
                .on(DirRoutes::list, HttpMethod.GET)
                .on((ex, path) -> Call.of(e -> mkdirs(e, path)), HttpMethod.PUT, HttpMethod.POST)
                .on((ex, path) -> Call.onWork(e -> delete(e, path)), HttpMethod.DELETE);
    }

    private static Call list(Exchange ex, StorePath path) {
        boolean sidecars = Exchange.truthy(ex.param("sidecars"));
        boolean recursive = Exchange.truthy(ex.param("recursive"));
        return Call.onWork(e -> Call.json(e, HttpResponseStatus.OK, Replies.Listing.of(path.toString(),
                recursive ? e.rc.store().walk(path, sidecars) : e.rc.store().list(path, sidecars))));
    }

    private static void mkdirs(Exchange e, StorePath path) throws Exception {
        boolean existed = e.rc.store().stat(path).isPresent();
        e.rc.store().mkdirs(path);
        e.respondJson(existed ? HttpResponseStatus.OK : HttpResponseStatus.CREATED,
                Replies.EntryReply.of(ApiRoutes.stat(e, path)));
    }

    private static Call.Reply delete(Exchange e, StorePath path) throws Exception {
        Entry en = ApiRoutes.stat(e, path);
        if (en.type() != EntryType.DIR) {
            throw StoreException.notADirectory(path + " is a " + en.type().jsonName() + ", not a directory");
        }
        if (en.children() > 0 && !Exchange.truthy(e.param("recursive"))) {
            throw StoreException.notEmpty(path + " is not empty (" + en.children() + " entries); add ?recursive=true");
        }
        return Call.json(e, HttpResponseStatus.OK, Replies.Deleted.of(e.rc.store().delete(path)));
    }
}
