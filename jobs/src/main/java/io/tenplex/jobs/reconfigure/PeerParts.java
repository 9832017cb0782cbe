package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.DaemonCallException;
import io.tenplex.jobs.common.DaemonClient.PartAction;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/** {@link InDoubt}'s questions through a {@link DaemonClient}: the other participants' parts and the coordinator's status. */
public final class PeerParts implements InDoubt.Ask {
    private static final long TIMEOUT_SECONDS = 5;

    private final String job;
    private final String planId;
    private final Map<Integer, String> daemons;
    private final String coordinator;
    private final String reconfiguration;
    private final DaemonClient client;

    /**
     * @param daemons every worker's daemon ({@code host:port})
     * @param coordinator the coordinator's {@code host:port}, or empty when unknown
     * @param reconfiguration the coordinator's id of the reconfiguration, or empty
     */
    public PeerParts(String job, String planId, Map<Integer, String> daemons, String coordinator, String reconfiguration,
            DaemonClient client) {
        this.job = job;
        this.planId = planId;
        this.daemons = Map.copyOf(daemons);
        this.coordinator = coordinator;
        this.reconfiguration = reconfiguration;
        this.client = client;
    }

    /** The questions of a part in doubt about its own plan. */
    static PeerParts of(PlanPart p, DaemonClient client) {
        return new PeerParts(p.job(), p.planId(), p.daemons(), p.coordinator(), p.reconfiguration(), client);
    }

    @Override
    public String part(int worker) {
        String a = daemons.get(worker);
        return a == null ? InDoubt.UNREACHABLE : answer(() -> client.partStatus(DaemonClient.address(a), job, planId)
                .thenApply(PartStatus::state));
    }

    @Override
    public String abort(int worker) {
        String a = daemons.get(worker);
        return a == null ? InDoubt.UNREACHABLE : answer(() -> client.partAction(DaemonClient.address(a), job, planId,
                PartAction.ABORT).thenApply(PartStatus::state));
    }

    @Override
    public String coordinator() {
        if (coordinator.isEmpty() || reconfiguration.isEmpty()) {
            return InDoubt.UNREACHABLE;
        }
        // a coordinator that answers "not found" restarted: it knows nothing of this reconfiguration any more
        return answer(() -> client.reconfigurationState(DaemonClient.address(coordinator), job, reconfiguration));
    }

    /** The state answered; {@link InDoubt#ABSENT} for "not found", "committed" for a refused abort, else unreachable. */
    private static String answer(Supplier<CompletableFuture<String>> call) {
        try {
            return call.get().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof DaemonCallException refused) {
                return switch (refused.kind()) {
                    case NOT_FOUND -> InDoubt.ABSENT;
                    case CONFLICT -> "committed"; // abort refused: the part is already committed
                    case OTHER -> InDoubt.UNREACHABLE;
                };
            }
            return InDoubt.UNREACHABLE;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return InDoubt.UNREACHABLE;
        } catch (TimeoutException | RuntimeException e) {
            return InDoubt.UNREACHABLE;
        }
    }
}
