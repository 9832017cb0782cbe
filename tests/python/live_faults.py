"""examples/elastic_gpt.py with one fault injected, for the failure tests of live reconfiguration.

Usage: live_faults.py FAULT -- <elastic_gpt.py arguments>

FAULT is one of
* ``none``;
* ``die-waiting:RANK``: rank RANK's first process exits with status 3 when it has saved for its first
  live reconfiguration and would wait for the commit (it has sealed: the generation completes and
  commits without it) while the other ranks wait;
* ``hang-regroup:RANK``: rank RANK's first process, told to continue in place, never joins the new
  process group (it waits forever), so the other ranks' group does not form in time.
A relaunched process (the launcher's fallback) runs without the fault. The rest is the example."""

import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

import elastic_gpt  # noqa: E402
import tenplex  # noqa: E402
from tenplex import live  # noqa: E402


def inject(fault, rank):
    kind, *args = fault.split(":")
    if kind == "die-waiting" and int(args[0]) == rank:
        def dying_wait(store, n, cfg, secret):
            print("rank %d: exiting with 3 instead of waiting for live reconfiguration %d (injected)" % (rank, n),
                  flush=True)
            os._exit(3)

        live._wait_for_role = dying_wait
    elif kind == "hang-regroup" and int(args[0]) == rank:
        form = live._form

        def hanging_form(dist, backend, store, prefix, cfg, mark):
            if mark:  # a regroup in place (not the process's first group)
                print("rank %d: not joining %s (injected)" % (rank, prefix), flush=True)
                threading.Event().wait()
            return form(dist, backend, store, prefix, cfg, mark)

        live._form = hanging_form
    elif kind not in ("none", "die-waiting", "hang-regroup"):
        sys.exit("live_faults.py: unknown fault %r" % fault)


if __name__ == "__main__":
    fault, rest = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    # only the first process of a rank (launched with the job's first group, or added live) has the fault
    if os.environ.get("TENPLEX_LIVE_PREFIX", "") == "tenplex/launch/1" or os.environ.get(
            "TENPLEX_LIVE_PREFIX", "").endswith("/group"):
        inject(fault, int(os.environ.get("RANK", 0)))
    args = elastic_gpt.parse_args(rest)
    elastic_gpt.main(args)
