package io.tenplex.server.jobs;

import io.tenplex.jobs.common.RangeReads;
import io.tenplex.ptc.RangeSyntax;
import io.tenplex.ptc.Region;
import io.tenplex.server.peer.ChecksumMissingException;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.store.StorePath;
import io.tenplex.transform.CorruptTransferException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;

/** {@link RangeReads} over the pooled Netty {@link PeerClient} (range GETs that ask for the holder's checksum). */
public final class NettyRangeReads implements RangeReads {
    private final PeerClient peers;

    public NettyRangeReads(PeerClient peers) {
        this.peers = peers;
    }

    @Override
    public CompletableFuture<OptionalInt> readRegion(InetSocketAddress daemon, StorePath path, Region region,
            ByteBuffer dst, long pace) {
        CompletableFuture<OptionalInt> out = new CompletableFuture<>();
        peers.readRegion(daemon, path.toString(), RangeSyntax.print(region), dst, pace).whenComplete((crc, t) -> {
            if (t == null) {
                out.complete(crc);
            } else if (unwrap(t) instanceof ChecksumMissingException missing) {
                out.completeExceptionally(new CorruptTransferException(missing.getMessage()));
            } else {
                out.completeExceptionally(unwrap(t));
            }
        });
        return out;
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof java.util.concurrent.CompletionException && t.getCause() != null ? t.getCause() : t;
    }
}
