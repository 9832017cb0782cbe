package io.tenplex.server;

import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.tenplex.store.DataRef;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;

/** {@code /api/v1/files/<path>}: read (a tensor is not a file here: 404 {@code wrong_type}), store, delete. */
final class FileRoutes {
    private FileRoutes() {
    }

    static Route route() {
        return Route.store("files")
                .on((ex, path) -> Call.of(e -> read(e, path)), HttpMethod.GET, HttpMethod.HEAD)
                .on((ex, path) -> new Uploads.FileUpload(path, Uploads.replaceRequested(ex), Uploads.created(path)),
                        HttpMethod.PUT, HttpMethod.POST)
                .on((ex, path) -> ApiRoutes.deleteTyped(path, EntryType.FILE), HttpMethod.DELETE);
    }

    private static void read(Exchange e, StorePath path) throws Exception {
        DataRef ref = e.rc.store().open(path);
        if (ref.type() == EntryType.TENSOR) {
            ref.close();
            throw StoreException.wrongType(StoreException.Kind.NOT_FOUND, path + " is a tensor; read it under "
                    + ApiRoutes.PREFIX + "tensors");
        }
        Downloads.file(e, ref, new DefaultHttpHeaders());
    }
}
