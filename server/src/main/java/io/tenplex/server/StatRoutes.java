package io.tenplex.server;

import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.store.DataRef;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.memory.BlockChecksums;

/** {@code /api/v1/stat/<path>} (what an entry is) and {@code /api/v1/checksums/<path>} (its stored CRC32Cs). */
final class StatRoutes {
    private StatRoutes() {
    }

    static Route stat() {
        return Route.store("stat").on((ex, path) -> Call.of(e -> e.respondJson(HttpResponseStatus.OK,
                Replies.EntryReply.of(ApiRoutes.stat(e, path)))), HttpMethod.GET);
    }

    /** The block list of a large entry is long: it is made on the work executor. */
    static Route checksums() {
        return Route.store("checksums").on((ex, path) -> Call.onWork(e -> checksums(e, path)), HttpMethod.GET);
    }

    private static Call.Reply checksums(Exchange e, StorePath path) throws Exception {
        try (DataRef ref = e.rc.store().open(path)) {
            BlockChecksums sums = ref.checksums();
            if (sums == null) {
                throw StoreException.notFound(path + " has no stored checksums");
            }
            return Call.json(e, HttpResponseStatus.OK, Replies.Checksums.of(ref, sums));
        }
    }
}
