package io.tenplex.adapters.rendezvous;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The rendezvous's rounds with a clock the test advances. The daemon's jobs and resource changes are
 * replaced by {@link Jobs}, a stand-in at that edge (what a change does is the daemon's; the whole path,
 * with real torchrun agents, a real daemon and real changes, is tests/python/test_torchrun.py).
 */
class RendezvousTest {
    private static final long S = 1_000_000_000L;

    /** The jobs as the rendezvous sees them: a current generation, the ranks' activity, the changes it started. */
    static final class Jobs implements RendezvousJobs {
        final List<ObjectNode> started = new ArrayList<>();
        final List<Change> changes = new ArrayList<>();
        Current current;
        long lastStopRead;
        long highest = -1;
        boolean finished;
        String error;
        RuntimeException refuse;

        @Override
        public Change start(String job, ObjectNode body) {
            if (refuse != null) {
                throw refuse;
            }
            started.add(body);
            String id = "r" + started.size();
            int world = body.get("devices").size();
            Change c = new Change() {
                @Override
                public String id() {
                    return id;
                }

                @Override
                public boolean finished() {
                    return finished;
                }

                @Override
                public String error() {
                    return finished ? error : null;
                }

                @Override
                public JsonNode config() {
                    return JsonNodeFactory.instance.objectNode().put("tp", 1).put("pp", 1).put("dp", world);
                }
            };
            changes.add(c);
            finished = false;
            return c;
        }

        @Override
        public long lastStopRead(String job) {
            return lastStopRead;
        }

        @Override
        public long highestStep(String job) {
            return highest;
        }

        @Override
        public Current current(String job) {
            return current;
        }

        @Override
        public void makeKnown(String job) {
        }
    }

    private final Jobs jobs = new Jobs();
    private long now = 100 * S;
    private final Rendezvous r = new Rendezvous(jobs, () -> now);

    private RendezvousStatus join(String node, String secret, int min, int max) {
        return r.join("j", new Rendezvous.Join(node, secret, 2, "127.0.0.1:20010", min, max, 1, 5));
    }

    private RendezvousStatus as(String node, String secret) {
        return r.status("j", node, secret);
    }

    @Test
    void theFirstRound_waitsTheLastCall_thenFormsOfTheNodesThatAsked() {
        RendezvousStatus a = join("a", null, 1, 3);
        assertEquals("gathering", a.state());
        assertEquals(Integer.valueOf(1), a.asked());
        now += S / 2;
        assertEquals(0, as("a", a.secret()).round());
        RendezvousStatus b = join("b", null, 1, 3);
        now += S + 1;
        RendezvousStatus st = as("b", b.secret());
        assertEquals(1, st.round());
        assertEquals(1, st.rank());
        assertEquals(4, st.world());
        assertEquals(List.of("a", "b"), st.members().stream().map(RendezvousStatus.Member::node).toList());
        assertEquals(4, st.config().get("dp").asInt());
        assertEquals(4, st.config().get("devices").size());
        assertEquals(0, st.waiting());
    }

    @Test
    void aRoundFormsAtOnce_whenEveryNodeItMayHaveJoined() {
        join("a", null, 2, 2);
        RendezvousStatus b = join("b", null, 2, 2);
        assertEquals(1, b.round());
        assertEquals(1, b.rank());
    }

    @Test
    void aNewcomer_toRanksThatDoNotSaveWithTenplex_restartsTheRoundAtOnce() {
        RendezvousStatus a = join("a", null, 1, 2);
        now += 2 * S;
        assertEquals(1, as("a", a.secret()).round());
        RendezvousStatus b = join("b", null, 1, 2);
        assertEquals(-1, b.rank());
        assertEquals(1, as("a", a.secret()).waiting());
        assertTrue(jobs.started.isEmpty());
        RendezvousStatus again = join("a", a.secret(), 1, 2);
        assertEquals(2, again.round());
        assertEquals(4, again.world());
    }

    @Test
    void aNewcomer_toRanksThatSaveWithTenplex_firstSavesAndMovesTheState() {
        RendezvousStatus a = join("a", null, 1, 2);
        now += 2 * S;
        as("a", a.secret());
        jobs.lastStopRead = now + 1;
        jobs.highest = 41;
        jobs.current = new RendezvousJobs.Current(40, 2, null);
        now += S;
        RendezvousStatus b = join("b", null, 1, 2);
        assertEquals("reconfiguring", b.state());
        assertEquals(1, jobs.started.size());
        ObjectNode body = jobs.started.get(0);
        assertEquals(42, body.get("atStep").asLong());
        assertEquals("[[0,0],[0,1],[0,2],[0,3]]", body.get("devices").toString());
        assertEquals("127.0.0.1:20010", body.get("daemons").get("0").asText());
        assertFalse(body.has("recover"));
        assertEquals(0, as("a", a.secret()).waiting());
        jobs.finished = true;
        assertEquals(1, as("a", a.secret()).waiting());
        join("a", a.secret(), 1, 2);
        RendezvousStatus st = as("b", b.secret());
        assertEquals(2, st.round());
        assertEquals(1, st.rank());
        assertEquals(4, st.config().get("dp").asInt());
    }

    @Test
    void aChangeThatFails_leavesTheRoundToTheNodesTheStateFits_andIsNotTriedAgain() {
        RendezvousStatus a = join("a", null, 1, 2);
        now += 2 * S;
        as("a", a.secret());
        jobs.lastStopRead = now + 1;
        jobs.current = new RendezvousJobs.Current(40, 2, null);
        RendezvousStatus b = join("b", null, 1, 2);
        jobs.error = "resource change r1 failed: no";
        jobs.finished = true;
        assertEquals(1, as("a", a.secret()).waiting()); // the ranks stopped for it: they start again
        join("a", a.secret(), 1, 2);
        RendezvousStatus st = as("b", b.secret());
        assertEquals(2, st.round());
        assertEquals(-1, st.rank());
        assertTrue(st.standby());
        assertEquals(2, st.world());
        assertEquals(jobs.error, st.error());
        now += 2 * S;
        as("a", a.secret());
        as("b", b.secret());
        assertEquals(1, jobs.started.size());
        assertEquals(0, as("a", a.secret()).waiting());
    }

    @Test
    void aLostNode_isDropped_andTheSurvivorsRoundFirstMovesTheCurrentGeneration() {
        RendezvousStatus a = join("a", null, 1, 2);
        RendezvousStatus b = join("b", null, 1, 2);
        assertEquals(1, b.round());
        jobs.current = new RendezvousJobs.Current(40, 4, null);
        now += 4 * S;
        as("a", a.secret());
        now += 2 * S; // b: 6 s without a word
        assertEquals(1, as("a", a.secret()).waiting());
        assertTrue(as("a", a.secret()).events().stream().anyMatch(e -> e.contains("node b was not heard from")));
        join("a", a.secret(), 1, 2);
        assertTrue(jobs.started.isEmpty()); // the last call: another node may still come
        now += 2 * S;
        assertEquals("reconfiguring", as("a", a.secret()).state());
        assertEquals(1, jobs.started.size());
        assertTrue(jobs.started.get(0).get("recover").asBoolean());
        assertEquals(2, jobs.started.get(0).get("devices").size());
        jobs.finished = true;
        RendezvousStatus st = as("a", a.secret());
        assertEquals(2, st.round());
        assertEquals(0, st.rank());
        assertEquals(2, st.config().get("dp").asInt());
    }

    @Test
    void aNodesCalls_needItsSecret_andOnlyNodeZeroPublishesTheStore() {
        RendezvousStatus a = join("a", null, 2, 2);
        RendezvousStatus b = join("b", null, 2, 2);
        assertThrows(StoreException.class, () -> join("a", null, 2, 2));
        assertThrows(StoreException.class, () -> join("a", b.secret(), 2, 2));
        assertThrows(StoreException.class, () -> as("a", "nope"));
        assertThrows(StoreException.class, () -> r.store("j", "b", b.secret(), 1, "127.0.0.1:9"));
        assertThrows(StoreException.class, () -> r.store("j", "a", b.secret(), 1, "127.0.0.1:9"));
        assertThrows(StoreException.class, () -> r.store("j", "a", a.secret(), 2, "127.0.0.1:9"));
        assertNull(as("a", a.secret()).store());
        assertEquals("127.0.0.1:9", r.store("j", "a", a.secret(), 1, "127.0.0.1:9").store());
    }

    @Test
    void nodesMustAgreeOnBoundsAndProcesses_andATargetStaysWithinThem() {
        join("a", null, 1, 3);
        assertThrows(StoreException.class, () -> join("b", null, 1, 4));
        assertThrows(StoreException.class, () -> r.join("j", new Rendezvous.Join("b", null, 3, "h:1", 1, 3, 1, 5)));
        assertThrows(IllegalArgumentException.class, () -> r.target("j", 0));
        assertThrows(IllegalArgumentException.class, () -> r.target("j", 4));
        assertThrows(IllegalArgumentException.class, () -> new Rendezvous.Join("a/b", null, 2, "h:1", 1, 3, 1, 5));
        assertThrows(IllegalArgumentException.class, () -> new Rendezvous.Join("a", null, 0, "h:1", 1, 3, 1, 5));
        assertThrows(IllegalArgumentException.class, () -> new Rendezvous.Join("a", null, 2, "h:1", 2, 1, 1, 5));
        assertThrows(IllegalArgumentException.class, () -> new Rendezvous.Join("a", null, 2, "h:1", 1, 3, 1, 0.5));
        assertThrows(IllegalArgumentException.class, () -> new Rendezvous.Join("a", null, 2, "h:1", 1, 3, 1, 301));
        assertThrows(IllegalArgumentException.class, () -> new Rendezvous.Join("..", null, 2, "h:1", 1, 3, 1, 5));
        assertThrows(IllegalArgumentException.class, () -> new Rendezvous.Join("a", null, 4096, "h:1", 1, 1024, 1, 5));
        assertThrows(StoreException.class, () -> r.status("other", null, null));
        // a refused join leaves no run behind
        assertThrows(StoreException.class, () -> r.join("other", new Rendezvous.Join("z", "a secret", 2, "h:1", 1, 1, 1, 5)));
        assertThrows(StoreException.class, () -> r.status("other", null, null));
        assertEquals(3, r.target("j", 3).target());
    }

    @Test
    void aRunKeepsBoundedNodes_andDropsThoseNotHeardFrom() {
        join("a", null, 1, 2);
        for (int i = 0; i < 9; i++) {
            join("w" + i, null, 1, 2); // 2 members and 8 waiting at most
        }
        assertTrue(assertThrows(StoreException.class, () -> join("x", null, 1, 2)).getMessage().contains("knows 10"));
        now += 6 * S; // none heard from: all dropped, room again
        assertEquals(-1, join("x", null, 1, 2).rank());
    }

    @Test
    void aClosedRun_endsItsStandbyNodes_andANewNodeStartsTheJobAgain() {
        RendezvousStatus a = join("a", null, 1, 2);
        now += 2 * S;
        as("a", a.secret());
        r.target("j", 1);
        jobs.lastStopRead = now + 1;
        RendezvousStatus b = join("b", null, 1, 2);
        assertTrue(as("b", b.secret()).standby());
        assertTrue(r.refusesChanges("j").contains("/api/v1/jobs/j/rendezvous/target"));
        assertNull(r.refusesChanges("other"));
        assertThrows(StoreException.class, () -> r.close("j", "b", null)); // only a node, with its secret
        assertThrows(StoreException.class, () -> r.close("j", "nobody", null));
        assertEquals("complete", as("a", a.secret()).state());
        assertEquals("closed", r.close("j", "b", b.secret()).state());
        assertThrows(StoreException.class, () -> r.target("j", 2));
        assertThrows(StoreException.class, () -> r.store("j", "a", a.secret(), 1, "127.0.0.1:9"));
        assertNull(r.refusesChanges("j"));
        assertEquals("closed", as("b", b.secret()).state());
        assertThrows(StoreException.class, () -> join("b", b.secret(), 1, 2));
        // a secret of the closed run does not carry over to a new one
        assertThrows(StoreException.class, () -> r.join("j", new Rendezvous.Join("c", a.secret(), 2, "h:1", 1, 2, 0, 5)));
        RendezvousStatus c = r.join("j", new Rendezvous.Join("c", null, 2, "127.0.0.1:20010", 1, 2, 0, 5));
        assertEquals(1, c.round());
        assertEquals(List.of("c"), c.members().stream().map(RendezvousStatus.Member::node).toList());
    }
}
