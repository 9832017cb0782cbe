package io.tenplex.datasets.streams;

/**
 * One streamed sample: its id (unique within a job's stream), its bytes (owned by the buffer that
 * holds it; never changed) and how many batches it has been in so far.
 */
public final class Sample {
    private final long id;
    private final byte[] data;
    private int reads;

    public Sample(long id, byte[] data, int reads) {
        if (reads < 0) {
            throw new IllegalArgumentException("reads " + reads + " (expected: >= 0)");
        }
        this.id = id;
        this.data = data;
        this.reads = reads;
    }

    public long id() {
        return id;
    }

    /** The sample's bytes, borrowed: callers must not change them. */
    public byte[] data() {
        return data;
    }

    public int reads() {
        return reads;
    }

    void read() {
        reads++;
    }

    /** Undoes a read whose batch never reached its reader. */
    void unread() {
        if (reads > 0) {
            reads--;
        }
    }
}
