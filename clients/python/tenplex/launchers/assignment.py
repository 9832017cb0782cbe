"""The adapter's assignment as a pod launcher reads it: once the job's stop flag is down and the assignment
(``/job/<job>/kubernetes/assignment.json``) is for the job's current complete generation, the pod's part of
it, and the environment of each rank it starts there. Both modes of the pod launcher use it
(:mod:`tenplex.launchers.pod`, :mod:`tenplex.launchers.pod_live`)."""

import json
import os
import secrets
import sys
import time

from ..checkpoint import generations, stop_state
from ..errors import TenplexError, UnknownJob
from ..wire import routes


TERMINATED = 143
"""A launcher's exit status once its pod is being deleted (SIGTERM) and its ranks have saved: 128 + SIGTERM,
as a process that signal ended, never 0. A Job counts a pod that exits 0 as a completed index, which it
does not run again: a pod deleted by a drain, a preemption or Kueue's suspension would then end its
share of training for good. The JobSet examples' podFailurePolicy ignores this status, so the index is
neither complete nor a failure, and the Job replaces the pod while the index is still wanted."""


def log(msg):
    """A line of the pod launcher's log (stderr)."""
    print("tenplex.launch: " + msg, file=sys.stderr, flush=True)


def current_assignment(c, job):
    """(the adapter's assignment, None) once the job's stop flag is down and the assignment is for the
    job's current complete generation; else (None, why not yet)."""
    try:
        if stop_state(job, client=c)["stop"]:
            return None, "the stop flag is up"
    except UnknownJob:
        return None, "the daemon does not know job %s yet (no save, no assignment)" % job
    r = c.request("GET", routes.files_route(routes.assignment_file(job)), ok=(200, 404))
    if r.status_code == 404:
        return None, "no assignment yet"
    a = r.json()
    current = generations(job, c).get("current")
    if a.get("generation") != current:
        return None, "the assignment is for generation %s, the job's is %s" % (a.get("generation"), current)
    return a, None


def live_secret(c, job):
    """The secret the live pod launchers of ``job`` sign their store's values with (docs/LIVE.md): the first
    launcher to ask creates it in the daemon, next to the assignment, with a create-only PUT (a second
    create is a 409 and changes nothing); every launcher reads the one that is there. It never leaves the
    daemon and the launchers' memory but as keys derived from it, in their ranks' environment."""
    path = routes.assignment_file(job).rsplit("/", 1)[0] + "/live-secret"
    mine = secrets.token_hex(32).encode("ascii")
    c.request("PUT", routes.files_route(path), ok=(200, 201, 409), data=mine, headers=c.upload_headers(mine))
    r = c.request("GET", routes.files_route(path))
    secret = r.content.decode("ascii", "replace").strip()
    if len(secret) < 32:
        raise TenplexError("the live secret %s of job %s is too short (%d characters)" % (path, job, len(secret)))
    return secret


def _state(c, job, pod):
    """(assignment or None, why not yet) for this pod."""
    a, why = current_assignment(c, job)
    if a is None:
        return None, why
    if a.get("config") is None:
        return None, "the assignment has no configuration (is the model stored with the job?)"
    mine = [p for p in a["pods"] if p["pod"] == pod]
    if not mine:
        return None, "pod %s is not in the assignment" % pod
    return (a, mine[0]), None


def wait_for_assignment(c, job, pod, poll, stopping):
    last = None
    while not stopping():
        got, why = _state(c, job, pod)
        if got is not None:
            return got
        if why != last:
            log("waiting: " + why)
            last = why
        time.sleep(poll)
    return None


def environment(a, mine, job, master_port):
    cfg = a["config"]
    daemons = {str(w["worker"]): w["address"] for w in a["workers"]}
    envs = []
    for local, rank in zip(mine["local"], mine["ranks"]):
        env = dict(os.environ)
        env.update({
            "RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": str(a["worldSize"]),
            "MASTER_ADDR": a["masterAddr"], "MASTER_PORT": str(master_port), "TENPLEX_JOB": job,
            "TENPLEX_TP": str(cfg["tp"]), "TENPLEX_PP": str(cfg["pp"]), "TENPLEX_DP": str(cfg["dp"]),
            "TENPLEX_CONFIG": json.dumps(cfg), "TENPLEX_DAEMONS": json.dumps(daemons),
        })
        envs.append(env)
    return envs
