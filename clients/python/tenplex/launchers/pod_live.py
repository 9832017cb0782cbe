"""Live mode of the per-pod launcher (``python3 -m tenplex.launch --live``, or ``TENPLEX_LIVE=1``).

The ranks run ``tenplex.elastic(train)`` with ``TENPLEX_LIVE=1`` (:mod:`tenplex.live`): at a change they
save and wait in the job's rendezvous store for their new role instead of exiting. The launcher of the
pod that holds rank 0 hosts that store (a c10d ``TCPStore`` at ``masterAddr:--master-port``) and, at each
assignment the adapter publishes, decides for every pod (:mod:`tenplex.launchers.pod_roles`):

* **live**: the ranks kept on their pod with their rank number and device continue in place (the host
  gives them their role), the ranks this pod gains are started here, the ranks no pod keeps leave
  (exit 0);
* **relaunch** (today's path): a kept rank would move to another pod or device, or a rank exited with an
  error while the ranks waited, or they did not all wait in time: every rank exits and every pod starts
  its ranks again, from the committed generation;
* **launch**: the store was started afresh (the first launch, or rank 0's pod or address changed: the
  store moves with it), so every pod starts its ranks.

After each decision the launchers watch until the new group formed; a rank that fails first (or a group
that does not form in ``TENPLEX_REGROUP_TIMEOUT`` + 60 s) makes every pod end and start its ranks again,
once; a second failure ends the launcher with the rank's status. Each launcher's log says why.

The store is reachable by every pod and so by anyone on the network: a decision, role or reason a
launcher reads there is acted on only when its MAC verifies (:mod:`tenplex.launchers.pod_roles`); one that
does not is logged and ignored (a rank refuses it: it fails, and the launchers relaunch)."""

import datetime
import json
import os
import time

from . import pod_roles as roles
from . import pod_signed as signed
from .. import live_auth
from ..c10d import tcp_store
from ..checkpoint import stop_state
from .assignment import TERMINATED, current_assignment, live_secret, log
from .rank_processes import RankProcesses

EXIT_SECONDS = 60.0


def _seconds(name, default):
    v = os.environ.get(name)
    return float(v) if v not in (None, "") else default


def _cfg(a):
    c = a["config"]
    return "(T,P,D)=(%d,%d,%d)" % (c["tp"], c["pp"], c["dp"])


class LiveLauncher:
    """One pod's launcher in live mode (module docstring)."""

    def __init__(self, client, args, command, terminating, environment):
        self.c, self.args, self.command, self.terminating = client, args, command, terminating
        self.environment = environment
        self.ranks = RankProcesses()
        self.prev = None  # the assignment this pod's ranks run under
        self.mine = None
        self.n = None  # the reconfiguration the ranks wait for next
        self.store = None  # a client (or the host) of the store the ranks use
        self.store_addr = None
        self.hosting = None  # the address of the store this launcher hosts
        self.retired = []  # stores hosted before: kept open (their ranks read "relaunch") until it hosts again
        self.leaving = set()  # ranks told to leave that may still run
        self.raises = 0
        self.secret = None  # the job's secret, which signs decisions
        self.epoch = self.key = None  # the store's epoch and its secret, which signs roles and reasons
        self.ignored = set()  # keys whose unsigned values were logged
        self.live_timeout = _seconds("TENPLEX_LIVE_TIMEOUT", 900.0)
        self.regroup_timeout = _seconds("TENPLEX_REGROUP_TIMEOUT", 120.0)

    # --- the loop ---------------------------------------------------------------------------------------

    def main(self):
        got = self._next_assignment(None)
        while True:
            if isinstance(got, int):
                return got
            a, mine = got
            status = self._take(a, mine)
            if status is not None:
                return status
            status = self._segment()
            if status is not None:
                return status
            got = self._change()

    def _poll(self):
        time.sleep(self.args.poll)

    def _state(self, prev_tag):
        """(assignment, this pod's entry or None) once the stop flag is down and the assignment is for the
        job's current generation and is not ``prev_tag``; else (None, why not yet)."""
        a, why = current_assignment(self.c, self.args.job)
        if a is None:
            return None, why
        if roles.tag(a) == prev_tag:
            return None, "no new assignment yet (still %s)" % prev_tag
        if a.get("config") is None:
            return None, "the assignment has no configuration (is the model stored with the job?)"
        mine = [p for p in a["pods"] if p["pod"] == self.args.pod]
        return (a, mine[0] if mine else None), None

    def _next_assignment(self, prev_tag):
        """The next assignment that names this pod; an exit status when terminating first."""
        last = None
        while True:
            self._reap()
            if self.terminating and not self.ranks.alive():
                log("terminating; no rank runs here (status %d)" % TERMINATED)
                return TERMINATED
            got, why = self._state(prev_tag)
            if got is not None and got[1] is not None:
                return got
            if got is not None:  # an assignment without this pod: its ranks leave (or relaunch) by their role
                a = got[0]
                prev_tag = roles.tag(a)
                self._retire(a)
                why = "pod %s has no ranks in the assignment for generation %s" % (self.args.pod, a.get("generation"))
                if self.ranks.alive():
                    log(why + "; ranks %s leave" % self.ranks.alive())
                    for r, code in self.ranks.end(self.live_timeout).items():
                        log("live: rank %d left with exit status %d" % (r, code))
                    self.leaving.clear()
                self.prev = self.mine = self.store = self.store_addr = None
            if why != last:
                log("waiting: " + why)
                last = why
            self._poll()

    def _exited(self):
        """``[(rank, status)]`` of this pod's ranks that exited since the last call, but for the ranks told
        to leave, which are only reported (one that exits with an error saved and committed before)."""
        out = []
        for r, code in self.ranks.exited():
            if r not in self.leaving:
                out.append((r, code))
                continue
            self.leaving.discard(r)
            if code == 0:
                log("live: rank %d left with exit status 0" % r)
            else:
                log("live: rank %d exited with %d after it was told to leave; nothing it saved is lost" % (r, code))
        return out

    def _reap(self):
        for r, code in self._exited():
            log("rank %d exited with %d" % (r, code))

    # --- a segment: training under one assignment --------------------------------------------------------

    def _segment(self):
        """Until the job ends (0), a rank fails outside a change (its status, ranks ended) or the job's
        resources change (None)."""
        while True:
            failed = None
            for r, code in self._exited():
                if code != 0 and failed is None:
                    failed = (r, code)
            flag = stop_state(self.args.job, client=self.c)
            if flag["raised"] or flag["raises"] != self.raises:
                if failed is not None:
                    self._note_failure(*failed)
                return None
            if failed is not None:
                self.ranks.kill()
                log("a rank exited with %d" % failed[1])
                return failed[1]
            if not self.ranks.alive():
                log("the job ended")
                return 0
            self._poll()

    def _change(self):
        """The job's resources change: the ranks save and wait for reconfiguration ``n``; watches them
        (a failure is noted for the host) until the next assignment that names this pod."""
        log("the job's resources are changing; ranks %s wait for live reconfiguration %d" % (
            self.ranks.alive(), self.n))
        noted = []
        prev_tag = roles.tag(self.prev)
        last = None
        while True:
            for r, code in self._exited():
                if code != 0 and not noted:
                    self._note_failure(r, code)
                    noted.append(r)
            if self.terminating and not self.ranks.alive():
                log("terminating; no rank runs here (status %d)" % TERMINATED)
                return TERMINATED
            got, why = self._state(prev_tag)
            if got is not None and got[1] is not None:
                return got
            if got is not None:
                return self._next_assignment(None)  # handles an assignment without this pod
            if why != last:
                log("waiting: " + why)
                last = why
            self._poll()

    def _note_failure(self, rank, code):
        why = "rank %d (pod %s) exited with %d during live reconfiguration %d" % (rank, self.args.pod, code, self.n)
        log(why + "; every rank will be relaunched")
        try:
            self._report(roles.failed_key(self.n), why)
        except RuntimeError as e:  # the store is gone: rank 0's pod went away, which relaunches all anyway
            log("could not tell the rendezvous store: %s" % e)

    # --- an assignment: decide, act, wait for the group --------------------------------------------------

    def _report(self, counter, why):
        signed.report(self.store, self.key, self.args.job, counter, why)

    def _reported(self, counter):
        return signed.reported(self.store, self.key, self.args.job, counter, self.ignored)

    def _take(self, a, mine):
        if self.secret is None:
            self.secret = live_secret(self.c, self.args.job)
        self._retire(a)
        host = roles.host_pod(a) == self.args.pod
        addr = a.get("masterAddr") or "127.0.0.1"
        old_store = self.store
        if host:
            fresh = self.hosting != addr or self.store is None
            if fresh:
                self.store = self._open(addr, True)
                self.hosting = addr
            d = self._decide(a, fresh)
        else:
            if self.store is None or self.store_addr != addr:
                self.store = self._open(addr, False)
            d = self._read_decision(a)
        self.store_addr = addr
        self.raises = stop_state(self.args.job, client=self.c)["raises"]
        return self._act(a, mine, d, old_store)

    def _open(self, addr, host):
        import torch.distributed as dist

        t = datetime.timedelta(seconds=self.live_timeout)
        if host:
            self.retired.clear()  # a store hosted before is done with (its ranks were relaunched): free the port
            log("hosting the rendezvous store at %s:%d" % (addr, self.args.master_port))
            return tcp_store(dist, addr, self.args.master_port, None, True, t, wait_for_workers=False)
        return tcp_store(dist, addr, self.args.master_port, None, False, t)

    def _retire(self, a):
        """This launcher hosted the store under the previous assignment and does not under ``a``: the
        ranks that wait in it are told to relaunch (the store moves with rank 0)."""
        if self.hosting is None or (roles.host_pod(a) == self.args.pod and self.hosting == a.get("masterAddr")):
            return
        why = (roles.cannot_continue(self.prev, a) if self.prev is not None else None) or \
            "the rendezvous store moves to pod %s" % roles.host_pod(a)
        if self.n is not None:
            self.store.set(roles.role_key(self.n), roles.signed_role(self.key, self.args.job, a, self.n,
                                                                     roles.relaunch_role(why)))
        self.retired.append(self.store)
        self.store = self.store_addr = self.hosting = None

    def _decide(self, a, fresh):
        """The host's decision for ``a`` (``fresh``: its store was just started), published in the store."""
        tag = roles.tag(a)
        if fresh or self.prev is None:
            why = None if self.prev is None else (roles.cannot_continue(self.prev, a)
                                                  or "the rendezvous store was started afresh")
            d = roles.decision("launch", "tenplex/pods/%s/launch" % tag, 1, tag, why)
        else:
            why = roles.cannot_continue(self.prev, a) or self._await_waiting()
            if why is None:
                d = roles.decision("live", roles.role_key(self.n) + "/group", self.n + 1, self.epoch)
            else:
                d = roles.decision("relaunch", "tenplex/pods/%s/relaunch" % tag, self.n + 1, self.epoch, why)
        key = roles.decision_key(a)  # only the host writes it (compare_set wakes no waiting get)
        self.store.set(key, live_auth.seal(self.secret, self.args.job, key, d))
        return json.loads(d)

    def _await_waiting(self):
        """None once every rank of the previous assignment waits for reconfiguration ``n``; else why not."""
        world = self.prev["worldSize"]
        deadline = time.time() + self.live_timeout
        while True:
            for r, code in self._exited():
                if code != 0:
                    self._note_failure(r, code)
            failed = self._reported(roles.failed_key(self.n))
            if failed is not None:
                return failed
            waiting = self.store.add(roles.waiting_key(self.n), 0)
            if waiting >= world:
                return None
            if time.time() > deadline:
                return "only %d of %d ranks waited for live reconfiguration %d within %.0f s (TENPLEX_LIVE_TIMEOUT)" % (
                    waiting, world, self.n, self.live_timeout)
            self._poll()

    def _read_decision(self, a):
        """The host's decision for ``a``; a value there that is not signed is ignored until the host's comes."""
        key, deadline = roles.decision_key(a), time.time() + self.live_timeout
        while True:
            try:
                d = live_auth.unseal(self.secret, self.args.job, key, self.store.get(key))
            except RuntimeError as e:
                raise RuntimeError("no decision for the assignment %s from the launcher of pod %s (rank 0) within "
                                   "%.0f s: %s" % (roles.tag(a), roles.host_pod(a), self.live_timeout, e)) from e
            if d is not None:
                return json.loads(d)
            signed.ignore(key, self.ignored, "; waiting for the host's")
            if time.time() > deadline:
                raise RuntimeError("no signed decision for the assignment %s within %.0f s" % (
                    roles.tag(a), self.live_timeout))
            self._poll()

    def _act(self, a, mine, d, old_store):
        how, world, gen = d["how"], a["worldSize"], a.get("generation")
        key = roles.store_secret(self.secret, d["epoch"])  # the ranks in the store hold the old one until now
        if how == "live":
            self.n, self.epoch, self.key = d["next"] - 1, d["epoch"], key  # a pod that joins learns them here
            if roles.host_pod(a) == self.args.pod:
                self.store.set(roles.role_key(self.n), roles.signed_role(self.key, self.args.job, a, self.n,
                                                                         roles.role(a, self.n, d["prefix"])))
            kept = [r for r in self.ranks.alive() if r in mine["ranks"]]
            added = [r for r in mine["ranks"] if r not in kept]
            leave = [r for r in self.ranks.alive() if r not in mine["ranks"]]
            self.leaving.update(leave)
            log("live reconfiguration %d: ranks %s continue in place under %s, generation %s%s%s" % (
                self.n, kept, _cfg(a), gen, ", starting ranks %s" % added if added else "",
                ", ranks %s leave" % leave if leave else ""))
            self._start(a, mine, added, d)
        else:
            why = d.get("why") or (roles.cannot_continue(self.prev, a) if self.prev is not None else None)
            if self.ranks.alive():
                self._tell_relaunch(old_store if how == "launch" else self.store, why or "a new launch", a)
                self.ranks.end(EXIT_SECONDS)
            self.leaving.clear()
            self.epoch, self.key = d["epoch"], key
            if why is None:
                log("launch: ranks %s of %d under %s, generation %s, live" % (mine["ranks"], world, _cfg(a), gen))
            else:
                log("live: %s; relaunching ranks %s of %d under %s from generation %s" % (
                    why, mine["ranks"], world, _cfg(a), gen))
            self._start(a, mine, mine["ranks"], d)
        self.prev, self.mine, self.n = a, mine, d["next"]
        return self._await_group(a, mine, d, fell_back=False)

    def _tell_relaunch(self, store, why, a):
        if store is None or self.n is None or self.key is None:
            return
        try:
            store.set(roles.role_key(self.n), roles.signed_role(self.key, self.args.job, a, self.n,
                                                                roles.relaunch_role(why)))
        except RuntimeError as e:  # the old store went with its pod: the ranks' wait fails and they are ended
            log("could not tell the ranks through the old rendezvous store: %s" % e)

    def _start(self, a, mine, ranks, d):
        envs = {int(e["RANK"]): e for e in self.environment(a, mine, self.args.job, self.args.master_port)}
        for r in ranks:
            env = dict(envs[r], TENPLEX_LIVE="1", TENPLEX_LIVE_PREFIX=d["prefix"], TENPLEX_LIVE_NEXT=str(d["next"]),
                       TENPLEX_SEGMENT=str(d["next"] - 1), TENPLEX_LIVE_SECRET=self.key)
            env.pop("TENPLEX_LIVE_WAIT", None)
            self.ranks.start(r, self.command, env)

    def _await_group(self, a, mine, d, fell_back):
        """None once the group of ``d`` formed; a rank that fails first, or a group that does not form in
        time, makes every pod start its ranks again under the abort prefix, once; then an exit status."""
        world, key = a["worldSize"], d["prefix"] + "/regrouped"
        abort = roles.abort_key(a) + ("/again" if fell_back else "")
        deadline = time.time() + self.regroup_timeout + 60
        status = 1
        why = None
        while why is None and self.store.add(key, 0) < world:
            for r, code in self._exited():
                if code != 0 and why is None:
                    status = code
                    why = "rank %d (pod %s) exited with %d before the process group %s formed" % (
                        r, self.args.pod, code, d["prefix"])
            if why is None and time.time() > deadline:
                why = "the process group %s did not form within %.0f s" % (d["prefix"], self.regroup_timeout + 60)
            if why is not None:
                self._report(abort, why)
            else:
                why = self._reported(abort)
                if why is None:
                    self._poll()
        if why is None:
            return None
        self.ranks.kill()  # the group did not form: nothing trained since the commit
        if fell_back:
            log("live: %s again after a relaunch; stopping (the job can resume from generation %s)" % (
                why, a.get("generation")))
            return status
        log("live: %s; relaunching ranks %s of %d under %s from generation %s" % (
            why, mine["ranks"], world, _cfg(a), a.get("generation")))
        d = dict(d, prefix=roles.abort_key(a) + "/group")
        self._start(a, mine, mine["ranks"], d)
        return self._await_group(a, mine, d, fell_back=True)
