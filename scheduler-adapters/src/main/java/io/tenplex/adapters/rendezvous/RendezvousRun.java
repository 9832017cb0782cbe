package io.tenplex.adapters.rendezvous;

import static io.tenplex.adapters.rendezvous.RoundLayout.body;
import static io.tenplex.adapters.rendezvous.RoundLayout.devices;
import static io.tenplex.adapters.rendezvous.RoundLayout.ids;
import static io.tenplex.adapters.rendezvous.RoundLayout.ordered;
import static io.tenplex.adapters.rendezvous.RoundLayout.world;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.ParallelConfig;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One job's rendezvous, round after round. A round forms from the nodes that asked for it once every
 * node of the last round that is still alive asked (their agents restart their workers), at least
 * {@code minNodes} did, and either {@code target} did or no node joined for the last-call time. Its
 * members keep their order; newcomers follow by arrival; nodes beyond {@code target} wait (standby).
 *
 * <p>While a round runs, a newcomer (or a new target) changes who should be in it. When the job's ranks
 * save with tenplex (they read its stop flag, or it has a complete generation), the rendezvous first posts a resource
 * change to the nodes of the next round: the ranks save at the stop step, the daemon moves the state,
 * and only then are the agents asked to restart ({@code waiting} > 0). Otherwise they are asked at once,
 * as torch's own rendezvous does. A round that forms with another world than the job's current
 * generation (a node was lost, or the job starts again on other nodes) first moves that generation
 * ({@code recover}). Not thread-safe: {@link Rendezvous} holds the lock.
 */
final class RendezvousRun {
    /** The run's bounds, fixed by its first node. */
    record Bounds(int minNodes, int maxNodes, long lastCallNanos, long keepAliveNanos) {
    }

    /** The events a status lists. */
    static final int MAX_EVENTS = 32;

    final String job;
    final Bounds bounds;
    private final RendezvousJobs jobs;
    private final Map<String, RendezvousNode> nodes = new LinkedHashMap<>();
    private int target;
    private int round;
    private List<RendezvousNode> members = List.of();
    private ParallelConfig config;
    private String store;
    private int restartFor;
    private long lastJoin;
    private boolean closed;
    private String error;
    private final java.util.ArrayDeque<String> events = new java.util.ArrayDeque<>();
    /** The change the next round waits for, the nodes it moves the state to, and what it chose once it committed. */
    private RendezvousJobs.Change change;
    private List<String> changeFor;
    private List<String> preparedFor;
    private JsonNode preparedConfig;
    /** Nodes a change to which was refused or failed: not tried again for the same nodes. */
    private List<String> refusedFor;

    RendezvousRun(String job, Bounds bounds, RendezvousJobs jobs) {
        this.job = job;
        this.bounds = bounds;
        this.jobs = jobs;
        this.target = bounds.maxNodes();
    }

    boolean closed() {
        return closed;
    }

    /** The processes of another node than {@code node} (0: there is none). */
    int nprocBesides(String node) {
        return nodes.values().stream().filter(n -> !n.id.equals(node)).mapToInt(n -> n.nproc).findFirst().orElse(0);
    }

    /** The most nodes a run keeps: its members and as many waiting (at least 8). */
    int maxKnown() {
        return bounds.maxNodes() + Math.max(8, bounds.maxNodes());
    }

    /** Whether no node of the run is left once those not heard from are dropped. */
    boolean idle(long now) {
        expire(now);
        return nodes.isEmpty();
    }

    /** How many nodes the run knows now. */
    int known() {
        return nodes.size();
    }

    boolean knows(String node) {
        return nodes.containsKey(node);
    }

    /** {@code node} asks to be in the next round (its agent starts, or restarts its workers); answers that round. */
    int join(String node, String secret, int nproc, String daemon, long now) {
        RendezvousNode n = nodes.get(node);
        if (n != null && !n.is(secret)) {
            throw new IllegalStateException(notYours(node));
        }
        if (n == null && nodes.size() >= maxKnown()) {
            expire(now);
            if (nodes.size() >= maxKnown()) {
                throw new IllegalStateException("job " + job + "'s rendezvous knows " + nodes.size() + " nodes, the most "
                        + "a run of at most " + bounds.maxNodes() + " nodes keeps (the others wait until one is dropped)");
            }
        }
        n = n != null ? n : nodes.computeIfAbsent(node, id -> new RendezvousNode(id, now));
        boolean member = round > 0 && member(n) && n.waitsFor == 0;
        n.nproc = nproc;
        n.daemon = daemon;
        n.seen = now;
        n.waitsFor = round + 1;
        lastJoin = now;
        int asked = round + 1;
        if (member && restartFor <= round) {
            restartFor = round + 1; // its workers ended: the others regroup too
            error = null;
        }
        tick(now);
        return asked;
    }

    /** {@code node} is alive (any call of it that carries its secret). */
    void heard(String node, String secret, long now) {
        RendezvousNode n = nodes.get(node);
        if (n != null && !n.is(secret)) {
            throw new IllegalStateException(notYours(node));
        }
        if (n != null) {
            n.seen = now;
        }
    }

    /** The secret of a node (for the answer to its join). */
    String secret(String node) {
        return nodes.get(node).secret;
    }

    private String notYours(String node) {
        return "node " + node + " of job " + job + "'s rendezvous is another agent's: a node's calls carry the "
                + "secret its first join answered";
    }

    /** The job ended (an agent's workers succeeded): nodes still waiting are told so. */
    void close() {
        if (!closed) {
            event("closed: the job ended");
        }
        closed = true;
    }

    /** Keeps what happened for the status (the last {@link #MAX_EVENTS}). */
    private void event(String what) {
        if (events.size() == MAX_EVENTS) {
            events.removeFirst();
        }
        events.addLast(what);
    }

    /** Node 0 of {@code round} says where the round's store is. */
    void store(String node, String secret, int forRound, String address) {
        RendezvousNode n = nodes.get(node);
        if (n == null || !n.is(secret)) {
            throw new IllegalStateException(n == null ? "node " + node + " is not in job " + job + "'s rendezvous"
                    : notYours(node));
        }
        if (forRound != round || members.isEmpty() || !members.get(0).id.equals(node) || gathering()) {
            throw new IllegalStateException("node " + node + " is not node 0 of round " + forRound + " of job " + job
                    + " (round " + round + " is the last that formed)");
        }
        store = address;
    }

    /** The job may have {@code nodes} nodes from now on. */
    void target(int nodes, long now) {
        if (nodes < bounds.minNodes() || nodes > bounds.maxNodes()) {
            throw new IllegalArgumentException("job " + job + " runs with " + bounds.minNodes() + " to "
                    + bounds.maxNodes() + " nodes (torchrun --nnodes), not " + nodes);
        }
        target = nodes;
        refusedFor = null;
        tick(now);
    }

    /** Moves the run on: lost nodes, a change that ended, a round that can form, a round that should change. */
    void tick(long now) {
        if (closed) {
            return; // the job ended: nothing forms or regroups any more
        }
        expire(now);
        if (change != null) {
            if (!change.finished()) {
                return;
            }
            ended(change);
        }
        if (gathering()) {
            form(now);
        } else if (round > 0) {
            regroup();
        }
    }

    private void expire(long now) {
        for (Iterator<RendezvousNode> it = nodes.values().iterator(); it.hasNext(); ) {
            RendezvousNode n = it.next();
            if (now - n.seen > bounds.keepAliveNanos()) {
                it.remove();
                event("node " + n.id + " was not heard from for " + bounds.keepAliveNanos() / 1_000_000_000L
                        + " s: dropped" + (member(n) ? "; the next round forms without it" : ""));
                if (member(n) && restartFor <= round) {
                    restartFor = round + 1;
                }
            }
        }
    }

    private void ended(RendezvousJobs.Change c) {
        change = null;
        String e = c.error();
        if (e == null) {
            preparedFor = changeFor;
            preparedConfig = c.config();
            event("resource change " + c.id() + " committed: the state is laid out for nodes " + changeFor);
        } else {
            refusedFor = changeFor;
            error = e;
            event(e);
        }
        if (restartFor <= round) {
            restartFor = round + 1; // the ranks stopped for it: they start again in the next round
        }
    }

    /** Whether the next round forms now: none formed yet, or the agents of this one were asked to restart. */
    private boolean gathering() {
        return !closed && (round == 0 || restartFor > round);
    }

    private void form(long now) {
        List<RendezvousNode> asked = asked();
        if (asked.size() < bounds.minNodes() || members.stream().anyMatch(m -> alive(m) && m.waitsFor
                != round + 1)) {
            return; // a live node of this round has not restarted yet
        }
        if (asked.size() < target && now - lastJoin < bounds.lastCallNanos()) {
            return; // more may come
        }
        List<RendezvousNode> next = asked.subList(0, Math.min(target, asked.size()));
        JsonNode c = ids(next).equals(preparedFor) ? preparedConfig : null;
        if (c == null) {
            RendezvousJobs.Current cur = jobs.current(job);
            if (cur != null && cur.world() != world(next)) {
                if (!ids(next).equals(refusedFor)) {
                    startChange(ids(next), body(next, true));
                    return;
                }
                // the state cannot move to those nodes: the round keeps the nodes it had, if they fit the state
                List<RendezvousNode> kept = asked.stream().filter(members::contains).toList();
                if (kept.isEmpty() || world(kept) != cur.world()) {
                    return; // no round fits the job's state; error says why
                }
                event("nodes " + ids(next) + " cannot take the job's state: the round keeps nodes " + ids(kept));
                next = kept;
            }
            c = cur == null ? null : cur.config();
        }
        become(next, c);
    }

    /** Round {@code round + 1} forms with {@code next}, under {@code c}'s (T,P,D) (null: data-parallel). */
    private void become(List<RendezvousNode> next, JsonNode c) {
        round++;
        members = List.copyOf(ordered(next));
        for (int i = 0; i < members.size(); i++) {
            members.get(i).memberOf = round;
            members.get(i).rank = i;
        }
        ParallelConfig pc = c == null || !c.has("tp") ? ParallelConfig.of(1, 1, world(members))
                : ParallelConfigJson.parse(c, "the job's configuration ");
        config = pc;
        event("round " + round + " formed: nodes " + ids(members) + ", world " + world(members) + ", (T,P,D)=("
                + pc.tp() + "," + pc.pp() + "," + pc.dp() + ")");
        store = null;
        restartFor = round;
        preparedFor = null;
        for (RendezvousNode n : nodes.values()) {
            n.waitsFor = member(n) ? 0 : n.waitsFor == 0 ? 0 : round + 1; // the others wait on
        }
        jobs.makeKnown(job);
    }

    /** Whether {@code n} is a member of the last round that formed. */
    private boolean member(RendezvousNode n) {
        return round > 0 && n.memberOf == round;
    }

    /** Whether {@code n} is still known (not dropped). */
    private boolean alive(RendezvousNode n) {
        return nodes.get(n.id) == n;
    }

    /** The nodes that asked for the next round: this round's members first, in their order, then by arrival. */
    private List<RendezvousNode> asked() {
        List<RendezvousNode> out = new ArrayList<>();
        for (RendezvousNode m : members) {
            if (alive(m) && m.waitsFor == round + 1) {
                out.add(m);
            }
        }
        for (RendezvousNode n : nodes.values()) {
            if (n.waitsFor == round + 1 && !member(n)) {
                out.add(n);
            }
        }
        return out;
    }

    /** While a round runs: when the nodes it should have differ, a change (or at once, a restart) regroups them. */
    private void regroup() {
        List<RendezvousNode> want = new ArrayList<>();
        members.stream().filter(this::alive).forEach(want::add);
        nodes.values().stream().filter(n -> n.waitsFor == round + 1 && !member(n)).forEach(want::add);
        List<RendezvousNode> next = want.subList(0, Math.min(target, want.size()));
        if (ids(next).equals(ids(members)) || next.size() < bounds.minNodes() || ids(next).equals(refusedFor)) {
            return;
        }
        if (jobs.lastStopRead(job) > 0 || jobs.current(job) != null) { // its ranks save with tenplex
            // the ranks stop after the newest step they reported, so that their save is newer than the current generation
            RendezvousJobs.Current cur = jobs.current(job);
            startChange(ids(next), body(next, false).put("atStep", Math.max(jobs.highestStep(job), cur == null ? -1
                    : cur.step()) + 1));
        } else {
            restartFor = round + 1; // the ranks do not save with tenplex: torchrun restarts them, as its own rendezvous does
        }
    }

    private void startChange(List<String> ids, ObjectNode body) {
        try {
            change = jobs.start(job, body);
            changeFor = ids;
            event("resource change " + change.id() + " started: " + (body.has("recover") ? "moves the job's current "
                    + "generation" : "the ranks save, then the state moves") + " to nodes " + ids);
        } catch (RuntimeException e) {
            refusedFor = ids;
            error = "resource change to nodes " + ids + " refused: " + e.getMessage();
            event(error);
        }
    }


    /** The run as {@code node} sees it; {@code brief}: without the members, configuration and events. */
    RendezvousStatus status(String node, boolean brief) {
        RendezvousNode n = node == null ? null : nodes.get(node);
        int rank = n != null && n.waitsFor == 0 && member(n) ? n.rank : -1;
        boolean standby = n != null && n.waitsFor > round && !gathering() && change == null;
        long newcomers = nodes.values().stream().filter(x -> x.waitsFor == round + 1 && !member(x)).count();
        int waiting = restartFor > round && round > 0 ? (int) Math.max(1, newcomers) : 0;
        String state = closed ? "closed" : change != null ? "reconfiguring" : gathering() ? "gathering" : "complete";
        return new RendezvousStatus(job, round, state, brief ? null : members.stream().map(m -> new RendezvousStatus
                .Member(m.id, m.nproc, m.daemon)).toList(), rank, standby, world(members), brief || config == null ? null
                : ParallelConfigJson.placement(config, devices(members, new ArrayList<>())), store,
                waiting, target, bounds.minNodes(), bounds.maxNodes(), change == null ? null : change.id(), error,
                brief ? null : List.copyOf(events), null, null);
    }
}
