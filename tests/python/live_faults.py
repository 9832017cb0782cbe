"""examples/elastic_gpt.py with one fault injected, for the failure tests of live reconfiguration.

Usage: live_faults.py FAULT -- <elastic_gpt.py arguments>

FAULT is one of
* ``none``;
* ``die-waiting:RANK``: rank RANK's first process exits with status 3 when it has saved for its first
  live reconfiguration and would wait for the commit (it has sealed: the generation completes and
  commits without it) while the other ranks wait;
* ``die-before-save:RANK``: rank RANK's first process exits with status 3 when it has seen the stop for
  its first live reconfiguration and is about to save (it has not saved: the generation cannot complete
  without it) while the other ranks save and wait;
* ``hang-regroup:RANK``: rank RANK's first process, told to continue in place, never joins the new
  process group (it waits forever), so the other ranks' group does not form in time;
* ``kill-before-save:RANK``, ``kill-waiting:RANK``, ``kill-regroup:RANK``, ``kill-load:RANK``: rank
  RANK's first process is SIGKILLed (it sends the signal to itself, so the moment is exact) at that phase
  of its first live reconfiguration: when it has seen the stop and is about to save, when it has saved
  and would wait for the commit, when it would form the new process group, or when it starts loading
  its new shards (the chaos test, LiveChaosIT);
* ``hold-before-save:PATH``: every rank's first process, at the save for its first live
  reconfiguration, waits until the file PATH exists (the test kills the daemon meanwhile).
A relaunched process (the launcher's fallback) runs without the fault. The rest is the example."""

import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

import elastic_gpt  # noqa: E402
import tenplex  # noqa: E402
from tenplex import live, stop  # noqa: E402


def inject(fault, rank):
    kind, *args = fault.split(":")
    if kind == "die-waiting" and int(args[0]) == rank:
        def dying_wait(store, n, cfg, secret):
            print("rank %d: exiting with 3 instead of waiting for live reconfiguration %d (injected)" % (rank, n),
                  flush=True)
            os._exit(3)

        live._wait_for_role = dying_wait
    elif kind == "die-before-save" and int(args[0]) == rank:
        save = tenplex.save

        def dying_save(*a, **kw):
            if stop.stop_seen():  # the save at the stop step of a change, not a periodic one
                print("rank %d: exiting with 3 instead of saving for the change (injected)" % rank, flush=True)
                os._exit(3)
            return save(*a, **kw)

        tenplex.save = dying_save
    elif kind == "hang-regroup" and int(args[0]) == rank:
        form = live._form

        def hanging_form(dist, backend, store, prefix, cfg, mark):
            if mark:  # a regroup in place (not the process's first group)
                print("rank %d: not joining %s (injected)" % (rank, prefix), flush=True)
                threading.Event().wait()
            return form(dist, backend, store, prefix, cfg, mark)

        live._form = hanging_form
    elif kind == "hold-before-save":
        hold_before_save(":".join(args), rank)
    elif kind.startswith("kill-") and int(args[0]) == rank:
        kill_at(kind[len("kill-"):], rank)
    elif kind not in ("none", "die-waiting", "die-before-save", "hang-regroup", "hold-before-save", "kill-before-save",
                      "kill-waiting", "kill-regroup", "kill-load"):
        sys.exit("live_faults.py: unknown fault %r" % fault)


def hold_before_save(path, rank):
    save = tenplex.save

    def held_save(*a, **kw):
        if stop.stop_seen():
            print("rank %d: holding its save until %s exists (injected)" % (rank, path), flush=True)
            while not os.path.exists(path):
                time.sleep(0.02)  # the test's go: a file it creates
        return save(*a, **kw)

    tenplex.save = held_save


def killed(rank, phase):
    print("rank %d: SIGKILL %s (injected)" % (rank, phase), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def kill_at(phase, rank):
    """Patches the call that starts ``phase`` so that the process SIGKILLs itself there."""
    if phase == "before-save":
        save = tenplex.save

        def killing_save(*a, **kw):
            if stop.stop_seen():  # the save at the stop step of a change, not a periodic one
                killed(rank, "before its save for the change")
            return save(*a, **kw)

        tenplex.save = killing_save
    elif phase == "waiting":
        live._wait_for_role = lambda store, n, cfg, secret: killed(rank, "while waiting for the commit of %d" % n)
    elif phase == "regroup":
        form = live._form

        def killing_form(dist, backend, store, prefix, cfg, mark):
            if mark:
                killed(rank, "while forming %s" % prefix)
            return form(dist, backend, store, prefix, cfg, mark)

        live._form = killing_form
    elif phase == "load":
        load, calls = tenplex.load, []

        def killing_load(*a, **kw):
            calls.append(1)
            if len(calls) > 1:  # the first load is the launch's (nothing saved yet)
                killed(rank, "while loading its new shards")
            return load(*a, **kw)

        tenplex.load = killing_load
    else:
        sys.exit("live_faults.py: unknown phase %r" % phase)


if __name__ == "__main__":
    fault, rest = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    # only the first process of a rank (launched with the job's first group, or added live) has the fault
    if os.environ.get("TENPLEX_LIVE_PREFIX", "") == "tenplex/launch/1" or os.environ.get(
            "TENPLEX_LIVE_PREFIX", "").endswith("/group"):
        inject(fault, int(os.environ.get("RANK", 0)))
    args = elastic_gpt.parse_args(rest)
    elastic_gpt.main(args)
