package io.tenplex.server;

import io.tenplex.store.Npy;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.RangeSyntax;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.RegionRead;
import io.tenplex.store.StorePath;
import io.tenplex.store.memory.Crc32c;
import java.util.OptionalInt;

/** Answers that stream stored bytes: tensors and sub-tensors (raw or {@code .npy}), files. */
final class Downloads {
    static final String NPY = "application/x-npy";
    static final String CRC_HEADER = "x-tensor-crc32c";
    /** Asks for {@code x-tensor-crc32c} on any region, computed when the stored block checksums cannot give it. */
    static final String WANT_CRC_HEADER = "x-want-crc32c";

    private Downloads() {
    }

    /**
     * Streams a tensor or the sub-tensor {@code range} selects, with {@code x-tensor-dtype} and
     * {@code x-tensor-dims} headers, or as {@code .npy} when asked. A block-aligned contiguous read
     * carries {@code x-tensor-crc32c}, derived from the stored block checksums. A reader may ask for
     * a pace ({@link Pacing}).
     */
    static Call tensor(Exchange head, StorePath path, String range, boolean npy) {
        if (!npy && Exchange.truthy(head.header(WANT_CRC_HEADER))) {
            // a region that is not contiguous has its CRC computed over its memory: not on the event loop
            return Call.onWork(e -> {
                Pacing.apply(e);
                return tensorReply(e, path, range, false);
            });
        }
        return Call.of(e -> {
            Pacing.apply(e);
            tensorReply(e, path, range, npy).send(e);
        });
    }

    /** Opens the tensor and makes its headers; the reply streams it (and owns the reference). */
    private static Call.Reply tensorReply(Exchange ex, StorePath path, String range, boolean npy) {
        DataRef ref = ex.rc.store().openTensor(path);
        try {
            TensorMeta meta = ref.meta();
            Region region = RangeSyntax.parse(range, meta.shape());
            RegionRead read = new RegionRead(ref, meta, region);
            Shape out = region.shape();
            HttpHeaders h = new DefaultHttpHeaders();
            h.set("x-tensor-dtype", meta.dtype().wireName());
            h.set("x-tensor-dims", out.toWire());
            io.netty.buffer.ByteBuf prefix = null;
            long length = read.byteSize();
            if (npy) {
                byte[] header = Npy.header(new TensorMeta(meta.dtype(), out));
                prefix = Unpooled.wrappedBuffer(header);
                length += header.length;
                h.set(HttpHeaderNames.CONTENT_TYPE, NPY);
            } else {
                h.set(HttpHeaderNames.CONTENT_TYPE, "application/octet-stream");
                OptionalInt crc = read.isContiguous() ? ref.crc32c(read.firstOffset(), read.byteSize())
                        : OptionalInt.empty();
                if (crc.isEmpty() && Exchange.truthy(ex.header(WANT_CRC_HEADER))) {
                    read.verifyShared(); // a checksum of bytes changed in a segment after the commit would vouch for them
                    crc = OptionalInt.of(computeCrc(ref, meta, region)); // one pass over the region's memory
                }
                if (crc.isPresent()) {
                    h.set(CRC_HEADER, Crc32c.hex(crc.getAsInt()));
                }
            }
            long size = length;
            RegionBody body = new RegionBody(ref, read, prefix, ex.rc.metrics()::served);
            return e -> {
                try {
                    e.respondStream(HttpResponseStatus.OK, h, size, body);
                } catch (RuntimeException x) {
                    body.close();
                    throw x;
                }
            };
        } catch (RuntimeException e) {
            ref.close();
            throw e;
        }
    }

    private static int computeCrc(DataRef ref, TensorMeta meta, Region region) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        RegionRead again = new RegionRead(ref, meta, region);
        java.nio.ByteBuffer scratch = null;
        while (again.remaining() > 0) {
            if (again.nextIsView()) {
                crc.update(again.nextView(1 << 24));
            } else {
                if (scratch == null) {
                    scratch = java.nio.ByteBuffer.allocate(1 << 20);
                }
                scratch.clear();
                again.copy(scratch);
                crc.update(scratch.flip());
            }
        }
        return (int) crc.getValue();
    }

    /** Streams the whole content of a file (or sidecar), with extra headers. */
    static void file(Exchange ex, DataRef ref, HttpHeaders h) throws Exception {
        try {
            RegionRead read = new RegionRead(ref, TensorMeta.of(DType.U8, ref.size()), Region.whole(Shape.of(ref.size())));
            if (!h.contains(HttpHeaderNames.CONTENT_TYPE)) {
                h.set(HttpHeaderNames.CONTENT_TYPE, "application/octet-stream");
            }
            OptionalInt crc = ref.crc32c(0, ref.size());
            if (crc.isPresent()) {
                h.set(CRC_HEADER, Crc32c.hex(crc.getAsInt()));
            }
            ex.respondStream(HttpResponseStatus.OK, h, ref.size(), new RegionBody(ref, read, null, ex.rc.metrics()::served));
        } catch (RuntimeException e) {
            ref.close();
            throw e;
        }
    }

    static boolean wantsNpy(Exchange ex) {
        String accept = ex.header(HttpHeaderNames.ACCEPT);
        return (accept != null && accept.toLowerCase(java.util.Locale.ROOT).contains(NPY)) || "npy".equals(ex.param("format"));
    }
}
