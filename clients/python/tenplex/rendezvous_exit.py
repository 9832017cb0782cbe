"""A rank of a torchrun job whose rendezvous the daemon hosts (``torchrun --rdzv-backend tenplex``) that
stopped for a change of the job's nodes: it saved, and its script returns. Were its process to end now,
torchrun would take the whole group's exit for the end of training; so, when the daemon says the job
regroups (a resource change that the rendezvous started runs, or the agents are asked to restart their
workers), the process waits at exit until its agent ends it and starts the next round's workers, which
load what the change moved. When the rendezvous says nothing of the kind (the job ended, the flag was
raised for another reason), the process exits as it would have."""

import atexit
import os
import sys
import time

from .rank_env import job_name
from .wire import routes
from .wire.http_client import Client

_held = []


def hold_after_stop():
    """Called when :func:`tenplex.should_stop` said stop: under the tenplex torchrun rendezvous
    (``TENPLEX_RDZV_ADDR`` and ``TENPLEX_RDZV_ROUND`` set by the agent), waits at exit as the module says.
    Once per process; does nothing elsewhere."""
    if _held or not os.environ.get("TENPLEX_RDZV_ADDR") or not os.environ.get("TENPLEX_RDZV_ROUND"):
        return
    _held.append(True)
    atexit.register(_wait_for_next_round, os.environ["TENPLEX_RDZV_ADDR"], job_name(None),
                    int(os.environ["TENPLEX_RDZV_ROUND"]))


def _wait_for_next_round(addr, job, round_, poll=0.2, patience=600.0):
    """Waits while the rendezvous regroups the job, until the agent ends this process (SIGTERM). Returns
    when the rendezvous closed, says no regrouping is coming, cannot be reached, or after ``patience``
    seconds without the agent ending it (then the process exits with status 1: the agent restarts it)."""
    c = Client(addr, timeout=10)
    said = False
    end = time.monotonic() + patience
    while time.monotonic() < end:
        try:
            st = c.request("GET", routes.rendezvous_route(job), params={"brief": "true"}).json()
        except Exception as e:  # noqa: BLE001 - at exit, a daemon that is gone ends the wait
            sys.stderr.write("tenplex: rank %s: the rendezvous of job %s cannot be asked (%s); exiting\n"
                             % (os.environ.get("RANK", "?"), job, e))
            return
        regroups = st.get("round", 0) > round_ or st.get("waiting", 0) > 0 or st.get("state") == "reconfiguring"
        if st.get("state") == "closed" or not regroups:
            return
        if not said:
            said = True
            sys.stderr.write("tenplex: rank %s saved for a change of job %s's nodes; waiting for torchrun to start "
                             "the next round\n" % (os.environ.get("RANK", "?"), job))
            sys.stderr.flush()
        time.sleep(poll)
    sys.stderr.write("tenplex: rank %s: torchrun did not restart the workers within %.0f s; exiting with status 1\n"
                     % (os.environ.get("RANK", "?"), patience))
    os._exit(1)
