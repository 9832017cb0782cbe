package io.tenplex.server;

import io.tenplex.store.Npy;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.BlobWriter;
import java.util.function.BiConsumer;

/** Calls that store a request body as a tensor or a file. */
final class Uploads {
    private Uploads() {
    }

    /** What to answer once an upload is stored: (exchange, whether it replaced something). */
    interface Answer extends BiConsumer<Exchange, Boolean> {
    }

    static void checkCanCreate(TensorStore store, StorePath path, boolean replace) {
        store.stat(path).ifPresent(e -> {
            if (e.type() == io.tenplex.store.EntryType.SIDECAR) {
                throw StoreException.exists(path + " is the sidecar of a tensor (read-only)");
            }
            if (e.type() == io.tenplex.store.EntryType.DIR) {
                throw StoreException.isADirectory(path + " is a directory");
            }
            if (!replace) {
                throw StoreException.exists(path + " exists (send x-replace: true or ?replace=true to replace it)");
            }
        });
    }

    /**
     * Runs {@code publish} (many entries into the store, under its lock) on the work executor, not on
     * the event loop, then answers on the event loop: 200 with an empty body, or the failure. When the
     * executor takes no more work (the server is closing), {@code unpublished} frees what
     * {@code publish} would have handed to the store, and the answer is 503.
     */
    static void publishOnWork(Exchange ex, Runnable publish, Runnable unpublished) {
        try {
            ex.rc.work().execute(() -> publishNow(ex, publish));
        } catch (java.util.concurrent.RejectedExecutionException e) { // the server is closing
            unpublished.run();
            throw new HttpError(HttpResponseStatus.SERVICE_UNAVAILABLE, "the daemon is shutting down: nothing was stored");
        }
    }

    private static void publishNow(Exchange ex, Runnable publish) {
        Throwable failure = null;
        try {
            publish.run();
        } catch (Throwable t) {
            failure = t;
        }
        Throwable f = failure;
        ex.ctx.executor().execute(() -> {
            if (f == null) {
                EMPTY_OK.accept(ex, true);
            } else {
                ex.respondError(f);
            }
        });
    }

    /** The declared body length, or -1 when the body is chunked. */
    static long contentLength(Exchange ex) {
        return HttpUtil.getContentLength(ex.request, -1L);
    }

    /** An upload whose body streams into a {@link BodySink} created by {@link #head}. */
    abstract static class SinkUpload extends Call {
        BodySink sink;
        UploadChecksum checksum = UploadChecksum.NONE;

        @Override
        void content(ByteBuf data) {
            sink.add(data);
        }

        @Override
        ByteBuf landing(long onWire) {
            return sink == null ? null : sink.landing(onWire);
        }

        @Override
        void abort() {
            if (sink != null) {
                sink.close();
            }
        }
    }

    /** A tensor whose dtype and shape are known from the request head; the body is its raw bytes. */
    static final class TensorUpload extends SinkUpload {
        private final StorePath path;
        private final TensorMeta meta;
        private final boolean replace;
        private final Answer answer;

        TensorUpload(StorePath path, TensorMeta meta, boolean replace, Answer answer) {
            this.path = path;
            this.meta = meta;
            this.replace = replace;
            this.answer = answer;
        }

        @Override
        void head(Exchange ex) {
            long declared = contentLength(ex);
            if (declared >= 0 && declared != meta.byteSize()) {
                throw HttpError.badRequest("body has " + declared + " bytes but tensor " + meta + " needs "
                        + meta.byteSize() + " (dtype x dims)");
            }
            checkCanCreate(ex.rc.store(), path, replace);
            checksum = UploadChecksum.of(ex);
            sink = new BodySink(ex.rc.store().allocator(), meta.byteSize(), ex.rc.store().checksumBlock());
        }

        @Override
        void end(Exchange ex) {
            end(ex, new byte[0], 0);
        }

        /** Stores the body once its checksum (over {@code prefix} and the data) is verified. */
        void end(Exchange ex, byte[] prefix, int prefixLength) {
            BlobWriter w = sink.finish("tensor " + meta);
            checksum.verify(w, prefix, prefixLength);
            boolean existed = ex.rc.store().stat(path).isPresent();
            ex.rc.store().putTensor(path, meta, w.take(), w.checksums(), replace);
            answer.accept(ex, existed);
        }
    }

    /** A file of any content. */
    static final class FileUpload extends SinkUpload {
        private final StorePath path;
        private final boolean replace;
        private final Answer answer;

        FileUpload(StorePath path, boolean replace, Answer answer) {
            this.path = path;
            this.replace = replace;
            this.answer = answer;
        }

        @Override
        void head(Exchange ex) {
            checkCanCreate(ex.rc.store(), path, replace);
            checksum = UploadChecksum.of(ex);
            sink = new BodySink(ex.rc.store().allocator(), contentLength(ex), ex.rc.store().checksumBlock());
        }

        @Override
        void end(Exchange ex) {
            BlobWriter w = sink.finish("the declared Content-Length");
            checksum.verify(w, new byte[0], 0);
            boolean existed = ex.rc.store().stat(path).isPresent();
            ex.rc.store().putFile(path, w.take(), w.checksums(), replace);
            answer.accept(ex, existed);
        }
    }

    /** A {@code .npy} body: the header gives dtype and shape, the rest is streamed into the tensor. */
    static final class NpyUpload extends Call {
        private final StorePath path;
        private final boolean replace;
        private final Answer answer;
        private byte[] head = new byte[256];
        private int headLen;
        private TensorUpload tensor;
        private int dataOffset;
        private long declared;
        private Exchange ex;

        NpyUpload(StorePath path, boolean replace, Answer answer) {
            this.path = path;
            this.replace = replace;
            this.answer = answer;
        }

        @Override
        void head(Exchange ex) {
            this.ex = ex;
            this.declared = contentLength(ex);
            checkCanCreate(ex.rc.store(), path, replace);
        }

        @Override
        void content(ByteBuf data) {
            if (tensor != null) {
                tensor.content(data);
                return;
            }
            int n = data.readableBytes();
            if (headLen + n > head.length) {
                if (headLen + n > (1 << 16) + 16) {
                    n = (1 << 16) + 16 - headLen;
                }
                byte[] bigger = new byte[Math.max(head.length * 2, headLen + n)];
                System.arraycopy(head, 0, bigger, 0, headLen);
                head = bigger;
            }
            data.getBytes(data.readerIndex(), head, headLen, n);
            headLen += n;
            Npy.Header h = Npy.parse(head, headLen);
            if (h == null) {
                if (headLen >= (1 << 16) + 16) {
                    throw HttpError.badRequest(".npy header too long");
                }
                return;
            }
            if (declared >= 0 && declared - h.dataOffset() != h.meta().byteSize()) {
                throw HttpError.badRequest(".npy body has " + (declared - h.dataOffset()) + " data bytes but "
                        + h.meta() + " needs " + h.meta().byteSize());
            }
            tensor = new TensorUpload(path, h.meta(), replace, answer);
            tensor.checksum = UploadChecksum.of(ex);
            dataOffset = h.dataOffset();
            tensor.sink = new BodySink(ex.rc.store().allocator(), h.meta().byteSize(), ex.rc.store().checksumBlock());
            ByteBuf rest = io.netty.buffer.Unpooled.wrappedBuffer(head, h.dataOffset(), headLen - h.dataOffset());
            tensor.content(rest);
            if (data.readableBytes() > n) {
                tensor.content(data.slice(data.readerIndex() + n, data.readableBytes() - n));
            }
        }

        @Override
        ByteBuf landing(long onWire) {
            return tensor == null ? null : tensor.landing(onWire); // the rest of the body is the tensor's
        }

        @Override
        void end(Exchange ex) {
            if (tensor == null) {
                throw HttpError.badRequest("body is not a complete .npy file (" + headLen + " bytes)");
            }
            tensor.end(ex, head, dataOffset); // the client's checksum covers the .npy header too
        }

        @Override
        void abort() {
            if (tensor != null) {
                tensor.abort();
            }
        }
    }

    /** Answers 201 Created for new entries and 200 for replacements, with the entry as JSON. */
    static Answer created(StorePath path) {
        return (ex, existed) -> {
            try {
                ex.respondJson(existed ? HttpResponseStatus.OK : HttpResponseStatus.CREATED,
                        Replies.EntryReply.of(ex.rc.store().stat(path).orElseThrow()));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
    }

    /** The prototype's answer: 200 with an empty body. */
    static final Answer EMPTY_OK = (ex, existed) -> ex.respond(HttpResponseStatus.OK, null, new byte[0], null);

    static boolean replaceRequested(Exchange ex) {
        return Exchange.truthy(ex.header("x-replace")) || Exchange.truthy(ex.param("replace"));
    }

    /**
     * The request's media type, lower case and without parameters ({@code X-Tensor; q=1} is
     * {@code x-tensor}): media types compare case-insensitively. Empty when there is none.
     */
    static String contentType(Exchange ex) {
        return Exchange.mediaType(ex.header(HttpHeaderNames.CONTENT_TYPE));
    }
}
