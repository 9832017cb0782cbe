package io.tenplex.adapters.rendezvous;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * A job's rendezvous as one node sees it ({@code GET /api/v1/jobs/<job>/rendezvous?node=}).
 *
 * @param round the last round that formed (0: none yet)
 * @param state {@code gathering} (a round forms), {@code complete}, {@code reconfiguring} (a resource change
 *     saves and moves the job's state before the next round), {@code closed} (the job ended)
 * @param rank the node's rank in {@code round} (-1: it is not in it, or it waits for a later round)
 * @param standby the node waits while the round has all the nodes it may have
 * @param world the round's processes
 * @param config the round's parallel configuration ({@code tp}, {@code pp}, {@code dp})
 * @param store where the round's store is ({@code host:port}, hosted by its node 0), once published
 * @param waiting nodes waiting for the next round: above 0, the round's agents restart their workers
 * @param target the nodes the job may have now (at most {@code maxNodes})
 * @param error the last change that failed or was refused (the round then keeps the nodes the state fits)
 * @param events what happened, oldest first (the last {@value RendezvousRun#MAX_EVENTS})
 * @param asked in the answer to a join: the round the node asked to be in (it is in it once {@code round}
 *     reached it and {@code rank} is not -1); else null
 * @param secret in the answer to a join: what the node's later calls carry ({@code secret}); else null
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record RendezvousStatus(String job, int round, String state, List<Member> members, int rank, boolean standby,
        int world, JsonNode config, String store, int waiting, int target, int minNodes, int maxNodes, String change,
        String error, List<String> events, Integer asked, String secret) {
    /** A node of the round, in rank order. */
    public record Member(String node, int nproc, String daemon) {
    }

    /** This answer to a join: the round the node asked for, and its secret. */
    RendezvousStatus answer(int round, String secret) {
        return new RendezvousStatus(job, round(), state, members, rank, standby, world, config, store, waiting, target,
                minNodes, maxNodes, change, error, events, round, secret);
    }
}
