package io.tenplex.server;

import io.netty.handler.codec.http.HttpMethod;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.EntryType;
import io.tenplex.store.StorePath;

/** {@code /api/v1/tensors/<path>}: read (a region, raw or {@code .npy}), store, delete. */
final class TensorRoutes {
    private TensorRoutes() {
    }

    static Route route() {
        return Route.store("tensors")
                .on(TensorRoutes::read, HttpMethod.GET, HttpMethod.HEAD)
                .on(TensorRoutes::write, HttpMethod.PUT, HttpMethod.POST)
                .on((ex, path) -> ApiRoutes.deleteTyped(path, EntryType.TENSOR), HttpMethod.DELETE);
    }

    private static Call read(Exchange ex, StorePath path) {
        return Downloads.tensor(ex, path, ex.param("range"), Downloads.wantsNpy(ex));
    }

    private static Call write(Exchange ex, StorePath path) {
        boolean replace = Uploads.replaceRequested(ex);
        if (Uploads.contentType(ex).startsWith(Downloads.NPY)) {
            return new Uploads.NpyUpload(path, replace, Uploads.created(path));
        }
        String dtype = ex.param("dtype") != null ? ex.param("dtype") : ex.header("x-tensor-dtype");
        String dims = ex.param("dims") != null ? ex.param("dims") : ex.header("x-tensor-dims");
        if (dtype == null) {
            throw HttpError.badRequest("missing dtype (query parameter dtype or header x-tensor-dtype), "
                    + "or send a .npy body with Content-Type: application/x-npy");
        }
        TensorMeta meta = new TensorMeta(DType.fromName(dtype), Shape.parse(dims));
        return new Uploads.TensorUpload(path, meta, replace, Uploads.created(path));
    }
}
