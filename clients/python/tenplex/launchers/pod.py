"""Per-pod launcher for jobs whose devices the Kubernetes adapter manages.

``python3 -m tenplex.launch [--pod NAME] -- <training command>`` runs in each pod of the job:

1. it waits until the job's stop flag is down and the adapter's assignment
   (``/job/<job>/kubernetes/assignment.json``) is for the job's current complete generation and
   names this pod (so a relaunch never uses the assignment from before the last save);
2. it starts one process per rank of this pod with ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
   ``MASTER_ADDR``, ``MASTER_PORT``, ``TENPLEX_TP``/``PP``/``DP``, ``TENPLEX_CONFIG`` (with the
   devices) and ``TENPLEX_DAEMONS`` (every worker's daemon, for the seal) in the environment;
3. when they have all exited: if the stop flag was raised since the launch (the daemon counts its
   raises, so a flag already cleared again is not missed), the job's resources are changing and it
   goes back to 1 for the next assignment; else the job has ended and so does the launcher. A rank
   that fails ends the launcher with its exit status.

The launcher of the pod that holds rank 0 hosts the rendezvous store at ``masterAddr:--master-port``
before its ranks start, and every rank connects to it as a client (``TORCHELASTIC_USE_AGENT_STORE``, a
key prefix per assignment), as ``tenplex run`` does. While the ranks run, a raised stop flag (a change is coming) makes the launcher start the next launch's
interpreters ahead, so that their ``import torch`` overlaps the save and the move
(:mod:`tenplex.launchers.pod_prestart`; ``--no-prestart`` turns it off).

SIGTERM (the pod is being deleted) is not passed on: the adapter has raised the stop flag, the
ranks save and exit, and then the launcher exits with status 143 (:data:`assignment.TERMINATED`, never
0: a Job would count the pod's index as completed) instead of relaunching.

With ``--live`` (or ``TENPLEX_LIVE=1``) the ranks keep their processes across changes
(:mod:`tenplex.launchers.pod_live`, docs/LIVE.md).
"""

import argparse
import os
import signal
import subprocess
import sys
import time

from ..checkpoint import stop_state
from ..errors import TenplexError
from ..live import live_mode
from ..rank_env import with_memory_tunables
from ..wire.http_client import Client
from . import pod_roles
from .assignment import current_assignment, environment, log, wait_for_assignment  # noqa: F401 (the former names)
from .assignment import TERMINATED
from .pod_prestart import HostedStore, Prestarted





def _arguments(argv):
    """(options, training command) from the command line; a usage error exits with 2."""
    ap = argparse.ArgumentParser(prog="python3 -m tenplex.launch", description=__doc__.split("\n\n")[0])
    ap.add_argument("--job", default=os.environ.get("TENPLEX_JOB"), help="job name (default: TENPLEX_JOB)")
    ap.add_argument("--addr", default=None, help="this node's daemon (default: TENPLEX_ADDR)")
    ap.add_argument("--pod", default=os.environ.get("POD_NAME") or os.environ.get("HOSTNAME"),
                    help="this pod's name (default: POD_NAME, else HOSTNAME)")
    ap.add_argument("--master-port", type=int, default=29500)
    ap.add_argument("--poll", type=float, default=2.0, help="seconds between checks while waiting")
    ap.add_argument("--live", action="store_true", default=live_mode(),
                    help="keep the ranks' processes across changes (tenplex.elastic; default: TENPLEX_LIVE=1)")
    ap.add_argument("--no-prestart", action="store_true",
                    help="start the next configuration's interpreters after the commit, not while the ranks save")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.job or not args.pod or not command:
        ap.error("--job (or TENPLEX_JOB), --pod (or POD_NAME/HOSTNAME) and a command after -- are required")
    return args, command


def _run_ranks(c, args, command, a, mine, terminating, ahead, store):
    """Runs this pod's ranks once (``terminating`` is non-empty once SIGTERM arrived), in interpreters
    ``ahead`` started where it has them; returns the launcher's exit status, or None to wait for the
    next assignment (the job's resources change)."""
    raises = stop_state(args.job, client=c)["raises"]
    procs = []
    try:
        rendezvous = store.env(a, pod_roles.host_pod(a) == args.pod, pod_roles.tag(a))
    except (ImportError, RuntimeError) as e:  # the port is taken (or torch is broken): no rank could meet
        log("cannot host the rendezvous store at %s:%d: %s" % (a.get("masterAddr"), args.master_port, e))
        ahead.close()
        return 2
    for env in environment(a, mine, args.job, args.master_port):
        env.update(rendezvous)
        p = ahead.take(env)
        procs.append(p if p is not None else  # tenplex.downtime: the process's start
                     subprocess.Popen(command, env=with_memory_tunables(dict(env, TENPLEX_SPAWN_TIME="%.6f" % time.time()))))
    ahead.close()
    while any(p.poll() is None for p in procs):
        if not terminating and not ahead.waiting:
            flag = stop_state(args.job, client=c)
            if flag["raised"] or flag["raises"] != raises:  # a change is coming: its ranks' interpreters start now
                ahead.start(len(procs))
        time.sleep(args.poll)  # polling the ranks and the stop flag
    codes = [p.returncode for p in procs]
    failed = next((x for x in codes if x != 0), 0)
    if failed:
        for p in procs:
            if p.poll() is None:
                p.kill()
        log("a rank exited with %d" % failed)
        ahead.close()
        return failed
    if terminating:
        log("pod terminating; ranks exited (status %d)" % TERMINATED)
        ahead.close()
        return TERMINATED
    flag = stop_state(args.job, client=c)
    if not flag["raised"] and flag["raises"] == raises:
        log("the job ended")
        ahead.close()
        return 0
    log("the job's resources are changing; waiting for the next assignment")
    return None


def main(argv=None):
    args, command = _arguments(argv)
    c = Client(args.addr)
    terminating = []
    signal.signal(signal.SIGTERM, lambda *_: terminating.append(True))
    if args.live:
        from .pod_live import LiveLauncher

        try:
            return LiveLauncher(c, args, command, terminating, environment).main()
        except (TenplexError, RuntimeError) as e:  # the daemon or the rendezvous store failed us
            log(str(e))
            return 2
    launches = 0
    ahead = Prestarted(command, log, enabled=not args.no_prestart)
    store = HostedStore(args.master_port, log)
    while True:
        try:
            got = wait_for_assignment(c, args.job, args.pod, args.poll, lambda: bool(terminating))
        except TenplexError as e:
            log(str(e))
            ahead.close()
            return 2
        if got is None:
            log("terminating before a launch (status %d)" % TERMINATED)
            ahead.close()
            return TERMINATED
        a, mine = got
        launches += 1
        cfg = a["config"]
        log("launch %d: ranks %s of %d under (T,P,D)=(%d,%d,%d), generation %s" % (
            launches, mine["ranks"], a["worldSize"], cfg["tp"], cfg["pp"], cfg["dp"], a.get("generation")))
        status = _run_ranks(c, args, command, a, mine, terminating, ahead, store)
        if status is not None:
            return status


if __name__ == "__main__":
    sys.exit(main())
