package io.tenplex.server.datasets;

import io.tenplex.datasets.ShardPeers;
import io.tenplex.server.peer.DaemonLink;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;

/**
 * Asks other daemons for loaded samples over HTTP ({@code POST /api/v1/datasets/<job>/samples},
 * {@link SampleWire}), with the scheme, trust and token of the {@link DaemonLink}. Any failure
 * (unreachable, not 200, interrupted) is an answer of none: the loader then reads elsewhere.
 */
public final class HttpShardPeers implements ShardPeers {
    private static final Duration TIMEOUT = Duration.ofMinutes(1);

    private final DaemonLink link;

    public HttpShardPeers(DaemonLink link) {
        this.link = link;
    }

    @Override
    public List<ByteBuffer> fetch(String peer, String job, int[] ids) {
        HttpRequest req = link.authorize(HttpRequest.newBuilder(link.uri(peer, DatasetRoutes.PREFIX + job + "/samples")))
                .timeout(TIMEOUT).POST(HttpRequest.BodyPublishers.ofByteArray(SampleWire.request(ids))).build();
        try {
            HttpResponse<byte[]> r = link.http().send(req, HttpResponse.BodyHandlers.ofByteArray());
            return r.statusCode() == 200 ? SampleWire.samples(r.body(), ids.length) : null; // else: no mount there
        } catch (IOException e) {
            return null; // an unreachable peer only means loading from elsewhere
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
