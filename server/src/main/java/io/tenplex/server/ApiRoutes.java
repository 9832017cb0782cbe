package io.tenplex.server;

import io.netty.handler.codec.http.DefaultHttpHeaders;
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
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.Crc32c;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The versioned API under {@code /api/v1}: tensors, files, directories, stat and checksums. Paths
 * after the resource name are store paths ({@code /api/v1/tensors/job/a/w} is the tensor
 * {@code /job/a/w}).
 */
final class ApiRoutes {
    static final String PREFIX = "/api/v1/";

    private ApiRoutes() {
    }

    static Call route(Exchange ex, String resource, StorePath path) {
        HttpMethod m = ex.method();
        return switch (resource) {
            case "tensors" -> tensors(ex, m, path);
            case "files" -> files(ex, m, path);
            case "dirs" -> dirs(ex, m, path);
            case "stat" -> get(ex, m, "stat", e -> e.respondJson(HttpResponseStatus.OK, Json.entry(stat(e, path))));
            case "checksums" -> get(ex, m, "checksums", e -> checksums(e, path));
            default -> throw new HttpError(HttpResponseStatus.NOT_FOUND, "no API resource '" + resource
                    + "' (expected tensors, files, dirs, stat, checksums)");
        };
    }

    private static Call get(Exchange ex, HttpMethod m, String what, Call.ThrowingConsumer<Exchange> answer) {
        if (!m.equals(HttpMethod.GET)) {
            throw HttpError.methodNotAllowed(m.name(), PREFIX + what, "GET");
        }
        return Call.of(answer);
    }

    private static Entry stat(Exchange ex, StorePath path) {
        return ex.rc.store().stat(path).orElseThrow(() -> StoreException.notFound("no entry at " + path));
    }

    private static Call tensors(Exchange ex, HttpMethod m, StorePath path) {
        if (m.equals(HttpMethod.GET) || m.equals(HttpMethod.HEAD)) {
            return Call.of(e -> Downloads.tensor(e, path, e.param("range"), Downloads.wantsNpy(e)));
        }
        if (m.equals(HttpMethod.PUT) || m.equals(HttpMethod.POST)) {
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
        if (m.equals(HttpMethod.DELETE)) {
            return Call.of(e -> deleteTyped(e, path, EntryType.TENSOR));
        }
        throw HttpError.methodNotAllowed(m.name(), PREFIX + "tensors", "GET, HEAD, PUT, POST, DELETE");
    }

    private static Call files(Exchange ex, HttpMethod m, StorePath path) {
        if (m.equals(HttpMethod.GET) || m.equals(HttpMethod.HEAD)) {
            return Call.of(e -> {
                DataRef ref = e.rc.store().open(path);
                if (ref.type() == EntryType.TENSOR) {
                    ref.close();
                    throw StoreException.wrongType(StoreException.Kind.NOT_FOUND, path + " is a tensor; read it under " + PREFIX + "tensors");
                }
                Downloads.file(e, ref, new DefaultHttpHeaders());
            });
        }
        if (m.equals(HttpMethod.PUT) || m.equals(HttpMethod.POST)) {
            return new Uploads.FileUpload(path, Uploads.replaceRequested(ex), Uploads.created(path));
        }
        if (m.equals(HttpMethod.DELETE)) {
            return Call.of(e -> deleteTyped(e, path, EntryType.FILE));
        }
        throw HttpError.methodNotAllowed(m.name(), PREFIX + "files", "GET, HEAD, PUT, POST, DELETE");
    }

    private static Call dirs(Exchange ex, HttpMethod m, StorePath path) {
        if (m.equals(HttpMethod.GET)) {
            boolean sidecars = Exchange.truthy(ex.param("sidecars"));
            return Call.of(e -> e.respondJson(HttpResponseStatus.OK, Json.listing(path.toString(),
                    Exchange.truthy(e.param("recursive")) ? e.rc.store().walk(path, sidecars)
                            : e.rc.store().list(path, sidecars))));
        }
        if (m.equals(HttpMethod.PUT) || m.equals(HttpMethod.POST)) {
            return Call.of(e -> {
                boolean existed = e.rc.store().stat(path).isPresent();
                e.rc.store().mkdirs(path);
                e.respondJson(existed ? HttpResponseStatus.OK : HttpResponseStatus.CREATED, Json.entry(stat(e, path)));
            });
        }
        if (m.equals(HttpMethod.DELETE)) {
            return Call.of(e -> {
                Entry en = stat(e, path);
                if (en.type() != EntryType.DIR) {
                    throw StoreException.notADirectory(path + " is a " + en.type().jsonName() + ", not a directory");
                }
                if (en.children() > 0 && !Exchange.truthy(e.param("recursive"))) {
                    throw StoreException.notEmpty(path + " is not empty (" + en.children()
                            + " entries); add ?recursive=true");
                }
                deleted(e, e.rc.store().delete(path));
            });
        }
        throw HttpError.methodNotAllowed(m.name(), PREFIX + "dirs", "GET, PUT, POST, DELETE");
    }

    private static void deleteTyped(Exchange e, StorePath path, EntryType type) throws Exception {
        Entry en = stat(e, path);
        if (en.type() != type) {
            String m = path + " is a " + en.type().jsonName() + ", not a " + type.jsonName();
            throw en.type() == EntryType.DIR ? StoreException.isADirectory(m)
                    : StoreException.wrongType(StoreException.Kind.CONFLICT, m);
        }
        deleted(e, e.rc.store().delete(path));
    }

    private static void deleted(Exchange e, DeleteCounts c) throws Exception {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("deletedBytes", c.bytes());
        m.put("files", c.files());
        m.put("dirs", c.dirs());
        e.respondJson(HttpResponseStatus.OK, m);
    }

    private static void checksums(Exchange e, StorePath path) throws Exception {
        try (DataRef ref = e.rc.store().open(path)) {
            BlockChecksums sums = ref.checksums();
            if (sums == null) {
                throw StoreException.notFound(path + " has no stored checksums");
            }
            List<String> blocks = new ArrayList<>(sums.blockCount());
            for (int i = 0; i < sums.blockCount(); i++) {
                blocks.add(Crc32c.hex(sums.block(i)));
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("path", path.toString());
            m.put("size", ref.size());
            m.put("algorithm", "crc32c");
            m.put("blockSize", sums.blockSize());
            m.put("crc32c", ref.crc32c(0, ref.size()).isPresent() ? Crc32c.hex(ref.crc32c(0, ref.size()).getAsInt()) : null);
            m.put("blocks", blocks);
            e.respondJson(HttpResponseStatus.OK, m);
        }
    }
}
