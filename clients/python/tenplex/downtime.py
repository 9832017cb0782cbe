"""The downtime of a reconfiguration as a rank sees it, phase by phase.

A rank marks the end of each phase with :func:`mark`; the phases, in order, are ``PHASES``: the stop
step's end (``stop``), the save (``save``), the wait for the daemon's commit, which covers planning and
moving (``commit``), the re-formation of the process groups (``regroup``, live mode) or the relaunch
(``relaunch``, from the process start to its first collective), the rebuild of the model partition
(``rebuild``, live mode), the load (``load``) and the first step under the new configuration
(``first_step``). Each mark keeps a wall-clock time (seconds since the epoch, comparable across
processes on one host) so that phases that span a relaunch can be joined by the daemon."""

import time

PHASES = ("stop", "save", "commit", "regroup", "relaunch", "rebuild", "load", "first_step")

_marks = []


def mark(phase):
    """Records that ``phase`` (one of ``PHASES``) ended now."""
    if phase not in PHASES:
        raise ValueError("unknown downtime phase %r (one of %s)" % (phase, ", ".join(PHASES)))
    _marks.append((phase, time.time()))


def marks():
    """The marks recorded in this process, oldest first: a list of ``(phase, wall_seconds)``."""
    return list(_marks)


def clear():
    """Forgets the marks recorded so far (after they were reported)."""
    del _marks[:]
