package io.tenplex.server;

import io.tenplex.store.memory.Blob;
import java.nio.ByteBuffer;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;

/**
 * A blob as a read-only seekable channel (for a parser that reads headers and seeks over data, such
 * as a tar index). Borrows the blob: the caller keeps its reference while the channel is in use.
 */
final class BlobChannel implements SeekableByteChannel {
    private final Blob blob;
    private long position;
    private boolean open = true;

    BlobChannel(Blob blob) {
        this.blob = blob;
    }

    @Override
    public int read(ByteBuffer dst) {
        if (position >= blob.size()) {
            return dst.hasRemaining() ? -1 : 0;
        }
        int n = (int) Math.min(dst.remaining(), blob.size() - position);
        blob.copyTo(position, n, dst);
        position += n;
        return n;
    }

    @Override
    public int write(ByteBuffer src) {
        throw new NonWritableChannelException();
    }

    @Override
    public long position() {
        return position;
    }

    @Override
    public SeekableByteChannel position(long newPosition) {
        if (newPosition < 0) {
            throw new IllegalArgumentException("negative position " + newPosition);
        }
        position = newPosition;
        return this;
    }

    @Override
    public long size() {
        return blob.size();
    }

    @Override
    public SeekableByteChannel truncate(long size) {
        throw new NonWritableChannelException();
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public void close() {
        open = false;
    }
}
