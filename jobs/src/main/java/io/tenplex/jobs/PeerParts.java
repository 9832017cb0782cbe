package io.tenplex.jobs;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.server.control.PartStatus;
import io.tenplex.server.control.WorkerPlan;
import io.tenplex.server.peer.DaemonLink;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** {@link InDoubt}'s questions over HTTP: the other participants' parts and the coordinator's status. */
final class PeerParts implements InDoubt.Ask {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private final WorkerPlan wp;
    private final DaemonLink link;

    /** @param link how the other daemons are reached (scheme, trusted certificates, token) */
    PeerParts(WorkerPlan wp, DaemonLink link) {
        this.wp = wp;
        this.link = link;
    }

    @Override
    public String part(int worker) {
        return partCall(worker, "", "GET");
    }

    @Override
    public String abort(int worker) {
        return partCall(worker, "/abort", "POST");
    }

    private String partCall(int worker, String action, String method) {
        String a = wp.getDaemonsMap().get(worker);
        if (a == null) {
            return InDoubt.UNREACHABLE;
        }
        try {
            HttpResponse<byte[]> r = send(a, JobPaths.API_PREFIX + wp.getJob() + "/parts/" + wp.getPlanId() + action, method);
            return switch (r.statusCode()) {
                case 200 -> PartStatus.parseFrom(r.body()).getState();
                case 404 -> InDoubt.ABSENT;
                case 409 -> "committed"; // abort refused: the part is already committed
                default -> InDoubt.UNREACHABLE;
            };
        } catch (Exception e) {
            return unreachable(e);
        }
    }

    @Override
    public String coordinator() {
        if (wp.getCoordinator().isEmpty() || wp.getReconfiguration().isEmpty()) {
            return InDoubt.UNREACHABLE;
        }
        try {
            HttpResponse<byte[]> r = send(wp.getCoordinator(), JobPaths.API_PREFIX + wp.getJob() + "/reconfigurations/"
                    + wp.getReconfiguration(), "GET");
            if (r.statusCode() == 404) {
                return InDoubt.ABSENT; // restarted: it knows nothing of this reconfiguration any more
            }
            return r.statusCode() == 200 ? new ObjectMapper().readTree(r.body()).path("state").asText(InDoubt.UNREACHABLE)
                    : InDoubt.UNREACHABLE;
        } catch (Exception e) {
            return unreachable(e);
        }
    }

    private HttpResponse<byte[]> send(String hostPort, String path, String method) throws Exception {
        InetSocketAddress a = PartRunner.address(hostPort);
        HttpRequest.Builder b = link.request(a, path).timeout(TIMEOUT).method(method, HttpRequest.BodyPublishers.noBody());
        if (method.equals("POST")) {
            b.header("Content-Type", Reconfiguration.PROTOBUF);
        }
        return link.http().send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static String unreachable(Exception e) {
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        return InDoubt.UNREACHABLE;
    }
}
