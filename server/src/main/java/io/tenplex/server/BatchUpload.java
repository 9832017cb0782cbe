package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.BlockChecksums;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code POST /upload} with {@code application/x-tenplex-batch}: many small tensors and files in one
 * compact body, stored all or nothing under {@code prefix}. The head and index ({@link BatchIndex})
 * come first; the entries' bytes follow, back to back in index order, and land in one allocation
 * that the entries then share ({@link Blob#slice}): one blob, one socket landing and one pass of
 * checksums (per entry, as they arrive) for the whole batch, where a tar archive costs a header, a
 * sidecar and a blob per entry. The index is held in the heap, counted with the control bodies in
 * flight; the data is at most {@link #MAX_DATA} bytes, since every entry keeps all of it allocated.
 */
final class BatchUpload extends Call {
    static final String CONTENT_TYPE = "application/x-tenplex-batch";
    /** Most data bytes of one batch: its entries share one allocation, kept while any of them is stored. */
    static final long MAX_DATA = 64L << 20;

    private enum State { HEAD, INDEX, DATA }

    private final io.tenplex.store.StorePath prefix;
    private final boolean replace;
    private final InPlace inPlace = new InPlace();
    private UploadChecksum checksum = UploadChecksum.NONE;
    private BodyCrc crc;
    private Exchange ex;
    private long bodyLength;
    private State state = State.HEAD;
    private byte[] head = new byte[BatchIndex.MAX_HEAD];
    private int headFill;
    private BatchIndex.Head parsed;
    private byte[] index;
    private int indexFill;
    private List<BatchIndex.Item> items;
    private BlobWriter writer;
    /** Each entry's blob, made once the index is read; handed to the store by {@link #end}. */
    private Blob[] slices;
    private AtomicLong accounted;
    private long reserved;

    BatchUpload(io.tenplex.store.StorePath prefix, boolean replace) {
        this.prefix = prefix;
        this.replace = replace;
    }

    @Override
    void head(Exchange ex) {
        this.ex = ex;
        bodyLength = Uploads.contentLength(ex);
        if (bodyLength < 0) {
            throw new HttpError(HttpResponseStatus.LENGTH_REQUIRED, "a batch upload needs a Content-Length "
                    + "(its entries' sizes are checked against the body before anything is allocated)");
        }
        checksum = UploadChecksum.of(ex);
        crc = checksum.requested() ? new BodyCrc() : null;
    }

    @Override
    void content(ByteBuf data) {
        int pos = data.readerIndex();
        int end = data.writerIndex();
        while (pos < end && state != State.DATA) {
            pos += state == State.HEAD ? headBytes(data, pos, end) : indexBytes(data, pos, end);
        }
        if (pos < end) {
            ByteBuf rest = data.slice(pos, end - pos);
            if (rest.readableBytes() > writer.size() - writer.written()) {
                throw HttpError.badRequest("batch body is longer than its index says");
            }
            inPlace.add(writer, rest);
        }
    }

    private int headBytes(ByteBuf data, int pos, int end) {
        int nl = data.indexOf(pos, end, (byte) '\n');
        int n = (nl < 0 ? end : nl) - pos;
        if (headFill + n > BatchIndex.MAX_HEAD) {
            throw HttpError.badRequest("not a batch: no newline in its first " + BatchIndex.MAX_HEAD + " bytes");
        }
        data.getBytes(pos, head, headFill, n);
        headFill += n;
        if (nl < 0) {
            return n;
        }
        headDone();
        return n + 1;
    }

    private void headDone() {
        parsed = BatchIndex.head(head, headFill, ex.rc.limits().controlBody());
        long before = headFill + 1L + parsed.indexBytes();
        if (before > bodyLength) {
            throw HttpError.badRequest("batch body of " + bodyLength + " bytes is shorter than its head and index ("
                    + before + ")");
        }
        if (crc != null) {
            crc.update(ByteBuffer.wrap(head, 0, headFill));
            crc.update(ByteBuffer.wrap(new byte[] {'\n'}));
        }
        reserve(parsed.indexBytes());
        index = new byte[parsed.indexBytes()];
        state = State.INDEX;
        if (index.length == 0) {
            indexDone();
        }
    }

    private int indexBytes(ByteBuf data, int pos, int end) {
        int n = Math.min(end - pos, index.length - indexFill);
        data.getBytes(pos, index, indexFill, n);
        indexFill += n;
        if (indexFill == index.length) {
            indexDone();
        }
        return n;
    }

    private void indexDone() {
        long cost = BatchIndex.heapCost(index, parsed.entries());
        if (cost > ex.rc.limits().controlBody()) {
            throw new HttpError(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "a batch's index of " + parsed.entries()
                    + " entries takes about " + cost + " bytes of heap once parsed, at most "
                    + ex.rc.limits().controlBody() + ": send fewer entries, or shorter names, in a batch");
        }
        reserve(cost - index.length); // the index's own bytes are reserved already
        items = BatchIndex.items(index, parsed, prefix);
        if (crc != null) {
            crc.update(ByteBuffer.wrap(index));
        }
        long[] sizes = new long[items.size()];
        long sum = 0;
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = items.get(i).bytes();
            sum = Math.addExact(sum, sizes[i]); // each below 10^18, at most 2^16 of them: cannot overflow
        }
        if (sum > MAX_DATA) {
            throw new HttpError(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "a batch holds at most " + MAX_DATA
                    + " bytes of data (its entries share one allocation); this one has " + sum
                    + ": send it as several batches, large tensors on their own");
        }
        long data = bodyLength - headFill - 1 - index.length;
        if (sum != data) {
            throw HttpError.badRequest("batch index gives its entries " + sum + " bytes but " + data
                    + " bytes follow it in the body");
        }
        index = null; // parsed; the items hold what is needed
        writer = BlobWriter.allocateSegmented(ex.rc.store().allocator(), sizes, ex.rc.store().checksumBlock());
        state = State.DATA;
        slices = slices(ex.rc.store().allocator(), writer.peek()); // now, while the bytes are on their way
    }

    @Override
    ByteBuf landing(long onWire) {
        return state == State.DATA ? inPlace.landing(writer, onWire) : null;
    }

    @Override
    void end(Exchange ex) {
        inPlace.detach();
        if (state != State.DATA || !writer.isComplete()) {
            throw HttpError.badRequest("batch body ended inside its " + (state == State.DATA ? "data" : "head or index"));
        }
        BlockChecksums[] sums = writer.segmentChecksums();
        if (crc != null) {
            for (int i = 0; i < sums.length; i++) {
                crc.append(sums[i].range(0, items.get(i).bytes()).orElseThrow(), items.get(i).bytes());
            }
            checksum.verify(crc.value(), bodyLength);
        }
        List<TensorStore.Put> puts = puts(sums);
        release();
        Uploads.publishOnWork(ex, () -> ex.rc.store().putAll(puts, replace), // takes every slice's reference, also on failure
                () -> puts.forEach(p -> p.blob().release()));
    }

    /**
     * The blob of each entry: a slice of the batch's blob, or a blob of its own when empty (no memory
     * kept for nothing). Each holds its own reference; on failure those made are released.
     */
    private Blob[] slices(io.tenplex.store.memory.Allocator allocator, Blob whole) {
        Blob[] out = new Blob[items.size()];
        try {
            long at = 0;
            for (int i = 0; i < out.length; i++) {
                long n = items.get(i).bytes();
                out[i] = n == 0 ? allocator.allocate(0) : whole.slice(at, n);
                at += n;
            }
        } catch (RuntimeException | Error e) {
            releaseSlices(out);
            throw e;
        }
        return out;
    }

    private static void releaseSlices(Blob[] blobs) {
        for (Blob b : blobs) {
            if (b != null) {
                b.release();
            }
        }
    }

    /** One put per entry, with its slice (now the put's) and checksums; the writer's reference is given back. */
    private List<TensorStore.Put> puts(BlockChecksums[] sums) {
        writer.take().release(); // the slices hold the blob now
        writer = null;
        List<TensorStore.Put> puts = new ArrayList<>(items.size());
        for (int i = 0; i < sums.length; i++) {
            BatchIndex.Item it = items.get(i);
            puts.add(new TensorStore.Put(it.path(), it.meta(), slices[i], sums[i]));
        }
        slices = null;
        return puts;
    }

    private void reserve(long n) {
        accounted = ex.rc.controlBytes();
        long now = accounted.addAndGet(n);
        reserved += n;
        if (now > ex.rc.limits().controlInFlight()) {
            throw new HttpError(HttpResponseStatus.TOO_MANY_REQUESTS, "too many request bytes held in the heap ("
                    + ex.rc.limits().controlInFlight() + " at most over all requests); retry shortly");
        }
    }

    private void release() {
        if (accounted != null && reserved > 0) {
            accounted.addAndGet(-reserved);
            reserved = 0;
        }
        index = null;
    }

    @Override
    void abort() {
        inPlace.detach();
        release();
        if (slices != null) {
            releaseSlices(slices);
            slices = null;
        }
        if (writer != null) {
            writer.close();
            writer = null;
        }
    }
}
