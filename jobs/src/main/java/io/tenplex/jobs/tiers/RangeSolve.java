package io.tenplex.jobs.tiers;

import io.tenplex.jobs.common.RangeReads;
import io.tenplex.ptc.IndexRange;
import io.tenplex.ptc.Region;
import io.tenplex.store.StorePath;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.zip.CRC32C;

/**
 * Solves an erasure-coded group's lost blocks range by range. GF(2^8) works byte by byte, so a range
 * of a lost block needs only the same range of the surviving parity blocks and members' blocks: the
 * parity blocks are read in chunks ending at the lost segments' ends (at most {@value #CHUNK} bytes
 * each, one read in flight per parity holder, each chunk checked against the holder's CRC32C), the
 * surviving members' segments one after another in block order, and each lost segment is solved and
 * handed on as soon as every block has arrived past its end. Bytes past the lost blocks' end are not
 * read. The caller checks each solved segment against its seal.
 */
final class RangeSolve {
    static final int CHUNK = 4 << 20;
    private final RangeReads reads;
    private final SegmentReads io;
    private final Duration timeout;

    /** Takes each lost segment once solved: {@code bytes} is borrowed for the call. */
    interface Solved {
        void segment(int lost, BlockLayout.Segment s, ByteBuffer bytes) throws IOException, InterruptedException;
    }

    /** The group: its manifests, the lost members, the parity blocks used and where to read everything. */
    record Group(GroupManifests manifests, List<Integer> gone, List<Integer> js, List<InetSocketAddress> parityHolders,
            List<StorePath> parityPaths, Map<Integer, InetSocketAddress> daemons, io.tenplex.jobs.common.JobLayout paths,
            long step) {
    }

    RangeSolve(RangeReads reads, SegmentReads io, Duration timeout) {
        this.reads = reads;
        this.io = io;
        this.timeout = timeout;
    }

    /** Solves every lost segment of {@code g} in block order, handing each to {@code out}. */
    void run(Group g, Solved out) throws IOException, InterruptedException {
        long length = g.manifests().length();
        if (length > Integer.MAX_VALUE) {
            throw new IOException("a block of " + length + " bytes is over 2 GiB");
        }
        Run r = new Run(g, (int) length, out);
        try {
            r.solve();
        } finally {
            r.parity.stop();
        }
    }

    /** One solve: the buffers, the frontiers, and the lost segments not handed on yet. */
    private final class Run {
        final Group g;
        final Solved out;
        final int need;
        final List<ByteBuffer> syndromes = new ArrayList<>();
        final List<ByteBuffer> terms = new ArrayList<>();
        final ParityChunks parity;
        final int[][] inv;
        final int[] next;
        long combined;

        Run(Group g, int length, Solved out) {
            this.g = g;
            this.out = out;
            int k = g.manifests().members().size();
            int lostEnd = 0;
            TreeSet<Long> ends = new TreeSet<>();
            for (int w : g.gone()) {
                for (BlockLayout.Segment s : g.manifests().layout(w).segments()) {
                    ends.add(s.offset() + s.item().size());
                }
                lostEnd = (int) Math.max(lostEnd, g.manifests().layout(w).length());
            }
            need = lostEnd;
            for (int t = 0; t < g.js().size(); t++) {
                syndromes.add(ByteBuffer.allocate(Math.max(1, length)));
                terms.add(ByteBuffer.allocate(Math.max(1, length)));
            }
            int[][] a = new int[g.gone().size()][g.gone().size()];
            for (int t = 0; t < g.js().size(); t++) {
                for (int u = 0; u < g.gone().size(); u++) {
                    a[t][u] = Gf256.cauchy(g.js().get(t), g.manifests().members().indexOf(g.gone().get(u)), k);
                }
            }
            inv = Gf256.invert(a);
            next = new int[g.gone().size()];
            parity = new ParityChunks(reads, g.parityHolders(), g.parityPaths(), syndromes, chunks(ends, need));
        }

        void solve() throws IOException, InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            parity.start();
            advance(members(deadline));
            while (!done()) {
                parity.awaitBeyond(combined, deadline);
                advance(Long.MAX_VALUE);
            }
        }

        /** Reads the surviving members' segments in block order, solving what is covered after each; their end. */
        private long members(long deadline) throws IOException, InterruptedException {
            List<Integer> members = g.manifests().members();
            List<BlockLayout.Segment> order = new ArrayList<>();
            List<Integer> of = new ArrayList<>();
            for (int i = 0; i < members.size(); i++) {
                if (g.gone().contains(members.get(i))) {
                    continue;
                }
                for (BlockLayout.Segment s : g.manifests().layout(members.get(i)).segments()) {
                    if (s.offset() < need) { // past the lost blocks' end a member's bytes solve nothing
                        order.add(s);
                        of.add(i);
                    }
                }
            }
            Integer[] byOffset = new Integer[order.size()];
            for (int x = 0; x < byOffset.length; x++) {
                byOffset[x] = x;
            }
            java.util.Arrays.sort(byOffset, java.util.Comparator.comparingLong(x -> order.get(x).offset()));
            for (int x = 0; x < byOffset.length; x++) {
                BlockLayout.Segment s = order.get(byOffset[x]);
                int i = of.get(byOffset[x]);
                ByteBuffer bytes = io.read(g.daemons().get(members.get(i)), g.paths(), g.step(), s);
                for (int t = 0; t < g.js().size(); t++) {
                    Gf256.mulAdd(terms.get(t).duplicate().position((int) s.offset()), bytes,
                            Gf256.cauchy(g.js().get(t), i, members.size()));
                }
                long frontier = x + 1 < byOffset.length ? order.get(byOffset[x + 1]).offset() : Long.MAX_VALUE;
                advance(frontier); // every member's bytes below the next segment's offset are in
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException("the surviving members' blocks were not read within " + timeout.toSeconds()
                            + " s");
                }
            }
            return Long.MAX_VALUE;
        }

        private boolean done() {
            for (int u = 0; u < g.gone().size(); u++) {
                if (next[u] < g.manifests().layout(g.gone().get(u)).segments().size()) {
                    return false;
                }
            }
            return true;
        }

        /** Combines what every block has delivered below {@code members}, then solves the lost segments it covers. */
        private void advance(long members) throws IOException, InterruptedException {
            long f = Math.min(Math.min(members, parity.checkedUpTo()), need);
            if (f > combined) {
                for (int t = 0; t < g.js().size(); t++) {
                    Gf256.mulAdd(slice(syndromes.get(t), combined, f), slice(terms.get(t), combined, f), 1);
                }
                combined = f;
            }
            for (int u = 0; u < g.gone().size(); u++) {
                List<BlockLayout.Segment> segs = g.manifests().layout(g.gone().get(u)).segments();
                while (next[u] < segs.size() && segs.get(next[u]).offset() + segs.get(next[u]).item().size() <= combined) {
                    BlockLayout.Segment s = segs.get(next[u]++);
                    out.segment(g.gone().get(u), s, solve(u, s.offset(), s.offset() + s.item().size()));
                }
            }
        }

        /**
         * Lost block {@code u} over [a, b), written over the members' terms there (summed into the
         * syndromes already: no member's bytes land below the combined frontier again).
         */
        private ByteBuffer solve(int u, long a, long b) {
            ByteBuffer dst = slice(terms.get(u), a, b);
            java.util.Arrays.fill(dst.array(), dst.arrayOffset(), dst.arrayOffset() + dst.remaining(), (byte) 0);
            for (int t = 0; t < g.js().size(); t++) {
                Gf256.mulAdd(dst, slice(syndromes.get(t), a, b), inv[u][t]);
            }
            return dst;
        }
    }

    private static ByteBuffer slice(ByteBuffer b, long from, long to) {
        return b.duplicate().position((int) from).limit((int) to).slice();
    }

    /** The parity chunks: [start, end) ranges ending at every lost segment's end, none over {@link #CHUNK}. */
    private static List<long[]> chunks(TreeSet<Long> ends, long need) {
        List<long[]> out = new ArrayList<>();
        long at = 0;
        for (long e : ends) {
            while (at < Math.min(e, need)) {
                long to = Math.min(Math.min(e, need), at + CHUNK);
                out.add(new long[] {at, to});
                at = to;
            }
        }
        return out;
    }

    /** The parity blocks read chunk after chunk, one read in flight per holder; checked on the solving thread. */
    private static final class ParityChunks {
        private final RangeReads reads;
        private final List<InetSocketAddress> holders;
        private final List<StorePath> paths;
        private final List<ByteBuffer> into;
        private final List<long[]> chunks;
        private final int[] arrived;
        private final int[][] crcs;
        private final int[] checked;
        private Throwable failed;
        private volatile boolean stopped;

        ParityChunks(RangeReads reads, List<InetSocketAddress> holders, List<StorePath> paths, List<ByteBuffer> into,
                List<long[]> chunks) {
            this.reads = reads;
            this.holders = holders;
            this.paths = paths;
            this.into = into;
            this.chunks = chunks;
            this.arrived = new int[holders.size()];
            this.checked = new int[holders.size()];
            this.crcs = new int[holders.size()][chunks.size()];
        }

        void start() {
            for (int t = 0; t < holders.size(); t++) {
                read(t, 0);
            }
        }

        void stop() {
            stopped = true;
        }

        private void read(int t, int i) {
            if (i == chunks.size() || stopped) {
                return;
            }
            long[] c = chunks.get(i);
            reads.readRegion(holders.get(t), paths.get(t), Region.of(IndexRange.of(c[0], c[1])),
                    slice(into.get(t), c[0], c[1]), 0).whenComplete((crc, e) -> {
                        synchronized (this) {
                            if (e != null || crc.isEmpty()) {
                                Throwable why = e instanceof java.util.concurrent.CompletionException x
                                        && x.getCause() != null ? x.getCause() : e;
                                failed = failed != null ? failed : why != null ? why
                                        : new IOException(paths.get(t) + " arrived without a checksum");
                            } else {
                                crcs[t][i] = crc.getAsInt();
                                arrived[t] = i + 1;
                            }
                            notifyAll();
                        }
                        if (e == null && crc.isPresent()) {
                            read(t, i + 1);
                        }
                    });
        }

        /**
         * Where every parity block is read and checked up to (their chunks' CRC32C checked here, not on
         * the reading thread); the first failure otherwise.
         */
        long checkedUpTo() throws IOException {
            long upTo = Long.MAX_VALUE;
            for (int t = 0; t < holders.size(); t++) {
                int n;
                synchronized (this) {
                    if (failed != null) {
                        throw failed instanceof IOException x ? new IOException(paths.get(t) + ": " + x.getMessage(), x)
                                : new IOException(paths.get(t) + ": " + failed, failed);
                    }
                    n = arrived[t];
                }
                for (; checked[t] < n; checked[t]++) {
                    long[] c = chunks.get(checked[t]);
                    CRC32C crc = new CRC32C();
                    crc.update(slice(into.get(t), c[0], c[1]));
                    if ((int) crc.getValue() != crcs[t][checked[t]]) {
                        throw new IOException("bytes " + c[0] + ":" + c[1] + " of " + paths.get(t) + " arrived with CRC32C "
                                + Crc32c.hex((int) crc.getValue()) + ", sent with " + Crc32c.hex(crcs[t][checked[t]]));
                    }
                }
                upTo = Math.min(upTo, n == 0 ? 0 : chunks.get(n - 1)[1]);
            }
            return upTo;
        }

        /** Waits until some parity block has a chunk past {@code at} not checked yet, or the reads failed. */
        synchronized void awaitBeyond(long at, long deadline) throws IOException, InterruptedException {
            while (failed == null && !newer()) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    throw new IOException("parity blocks " + paths + " were not read within the rebuild's timeout");
                }
                wait(left);
            }
        }

        private boolean newer() {
            for (int t = 0; t < holders.size(); t++) {
                if (arrived[t] > checked[t]) {
                    return true;
                }
            }
            return false;
        }
    }
}
