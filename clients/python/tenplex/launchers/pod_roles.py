"""What the pod launchers of a live Kubernetes job agree on at each assignment (pure functions, no I/O).

The Kubernetes adapter publishes an assignment (``/job/<job>/kubernetes/assignment.json``) after each
committed change: the world size, the configuration and each pod's ranks. In live mode
(:mod:`tenplex.launchers.pod_live`) the launcher of the pod that holds rank 0 hosts the job's rendezvous store
and decides, once per assignment, how every pod goes on; the others read that decision from the store.
The keys (docs/LIVE.md, "The Kubernetes pod launcher"):

* ``tenplex/pods/<tag>``: the decision for the assignment ``tag`` (:func:`tag`), JSON
  ``{"how": "launch" | "live" | "relaunch", "prefix": P, "next": N, "epoch": E, "why": ...}``: ``launch`` (a store
  started afresh: every pod starts its ranks), ``live`` (the kept ranks continue in place, added ranks
  start, the others leave) or ``relaunch`` (every rank exits and is started again); the ranks form their
  group under ``P`` and wait for reconfiguration ``N`` next;
* ``tenplex/pods/<tag>/abort`` (a counter) and ``.../abort/why``: a rank failed before the group of the
  decision formed; every pod ends its ranks and starts them again under ``tenplex/pods/<tag>/abort``;
* ``tenplex/live/<n>/failed`` (a counter) and ``.../failed/why``: a rank exited with an error while the
  ranks waited for reconfiguration ``n``; the decision is then ``relaunch``;
* the keys of :mod:`tenplex.live` (``tenplex/live/<n>``, ``.../waiting``, ``<prefix>/regrouped``).

Anyone who reaches the store can set these keys, so every value a launcher or rank acts on is signed
(:mod:`tenplex.live_auth`): a decision with the job's secret (:func:`tenplex.launchers.assignment.live_secret`),
the roles and the reasons at ``.../why`` with the secret of the store's epoch ``E`` (:func:`store_secret`:
the tag of the assignment whose decision started the store), which the ranks get as ``TENPLEX_LIVE_SECRET``.
A value that does not verify is not acted on."""

import json

from .. import live_auth


def tag(a):
    """The assignment's name in the store's keys: its generation and the change that led to it."""
    return "g%s-c%s" % (a.get("generation"), a.get("change"))


def placement(a):
    """``{rank: (pod, local device)}`` of assignment ``a``."""
    out = {}
    for p in a["pods"]:
        for local, rank in zip(p["local"], p["ranks"]):
            out[rank] = (p["pod"], local)
    return out


def host_pod(a):
    """The pod that holds rank 0 (its launcher hosts the store at ``masterAddr``), or None."""
    return placement(a).get(0, (None, None))[0]


def cannot_continue(prev, a):
    """Why the ranks that ``prev`` and ``a`` share cannot continue in place under ``a`` (a rank's process
    cannot move to another pod or device, and the store lives in rank 0's pod), or None."""
    before, after = placement(prev), placement(a)
    if host_pod(prev) != host_pod(a) or prev.get("masterAddr") != a.get("masterAddr"):
        return "rank 0 moves from pod %s (%s) to pod %s (%s), and the rendezvous store with it" % (
            host_pod(prev), prev.get("masterAddr"), host_pod(a), a.get("masterAddr"))
    for r in range(min(prev["worldSize"], a["worldSize"])):
        if before.get(r) != after.get(r):
            return "rank %d moves from pod %s (local device %s) to pod %s (local device %s)" % (
                (r,) + tuple(before.get(r, (None, None))) + tuple(after.get(r, (None, None))))
    return None


def decision(how, prefix, next_n, epoch, why=None):
    d = {"how": how, "prefix": prefix, "next": next_n, "epoch": epoch}
    if why is not None:
        d["why"] = why
    return json.dumps(d)


def role(a, n, prefix):
    """Reconfiguration ``n``'s role for the ranks (:mod:`tenplex.live`): the new world, configuration
    with its devices, and the prefix of the new group."""
    return json.dumps({"world": a["worldSize"], "config": a["config"], "prefix": prefix, "segment": n})


def relaunch_role(why):
    return json.dumps({"relaunch": why})


def store_secret(job_secret, epoch):
    """The secret of the store started for the assignment tagged ``epoch``: its roles and reasons are signed
    with it, and its ranks hold it (a role of another store's epoch, with the same ``n``, does not verify)."""
    return live_auth.derive(job_secret, "store " + epoch)


def signed_role(secret, job, a, n, text):
    """The value of ``tenplex/live/<n>`` for the role ``text`` (:func:`role`, :func:`relaunch_role`) under ``a``."""
    return live_auth.seal_role(secret, job, n, a.get("change") if a else None, text)


def decision_key(a):
    return "tenplex/pods/" + tag(a)


def abort_key(a):
    return decision_key(a) + "/abort"


def role_key(n):
    return "tenplex/live/%d" % n


def waiting_key(n):
    return role_key(n) + "/waiting"


def failed_key(n):
    return role_key(n) + "/failed"
