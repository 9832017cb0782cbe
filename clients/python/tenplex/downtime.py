"""The downtime of a reconfiguration as a rank sees it, phase by phase.

A rank marks the end of each phase with :func:`mark`; the phases, in order, are ``PHASES``: the stop
step's end (``stop``), the save (``save``), the wait for the daemon's commit, which covers planning and
moving (``commit``), the re-formation of the process groups (``regroup``, live mode) or the relaunch
(``relaunch``, from the process start to its first collective), the rebuild of the model partition
(``rebuild``, live mode), the load (``load``) and the first step under the new configuration
(``first_step``). Each mark keeps a wall-clock time (seconds since the epoch, comparable across
processes on one host) so that phases that span a relaunch can be joined by the daemon.

:func:`report` sends the marks to the rank's daemon (``POST /api/v1/jobs/<job>/downtime``), which joins
every rank's marks of a reconfiguration into its split (docs/OBSERVABILITY.md). In relaunch mode the
checkpoint calls mark and report by themselves: :func:`tenplex.should_stop` marks ``stop`` when it first
answers true, the save that follows marks ``save`` and reports both; a relaunched process's
:func:`tenplex.load` marks ``relaunch`` when it starts (the process start, ``TENPLEX_SPAWN_TIME`` from the
launcher, to here: imports and process groups) and ``load`` when it ends, and the first
:func:`tenplex.should_stop` (or save) after a later step marks ``first_step`` and reports the three.
Reports run on a background thread; a failed one is logged, never raised into training."""

import logging
import os
import threading
import time

from .errors import TenplexError

PHASES = ("stop", "save", "commit", "regroup", "relaunch", "rebuild", "load", "first_step")
SPAWN_ENV = "TENPLEX_SPAWN_TIME"
REPORT_TIMEOUT = 10  # seconds a background report may take (an unreachable daemon must not hold up an exit)
BUSY_RETRIES = 4  # a background report answered 503 or 429 (the daemon busy) is sent again, waiting 0.2 s, 0.4 s, ...

log = logging.getLogger("tenplex")
_marks = []
_slow = []  # (phase, what, why): a phase that took a slower way than it could have, reported with the marks
_lock = threading.Lock()
# what the checkpoint calls saw: a stop not yet followed by a save, and the step a relaunched process loaded
_auto = {"stopped": False, "loaded": None, "load_started": None, "rebuild_pending": False}
_reports = []


def mark(phase, at=None):
    """Records that ``phase`` (one of ``PHASES``) ended now (or at ``at``, seconds since the epoch)."""
    if phase not in PHASES:
        raise ValueError("unknown downtime phase %r (one of %s)" % (phase, ", ".join(PHASES)))
    with _lock:
        _marks.append((phase, time.time() if at is None else float(at)))


def note_slow(phase, what, why):
    """Records that ``phase`` took a slower way than it could have (``what``: e.g. "12 tensors over REST")
    and ``why``; the next report carries it to the daemon, whose split of the change lists it."""
    if phase not in PHASES:
        raise ValueError("unknown downtime phase %r (one of %s)" % (phase, ", ".join(PHASES)))
    with _lock:
        if all(p != phase for p, _, _ in _slow):
            _slow.append((phase, str(what)[:160] or "?", str(why)[:600] or "?"))


def marks():
    """The marks recorded in this process, oldest first: a list of ``(phase, wall_seconds)``."""
    with _lock:
        return list(_marks)


def clear():
    """Forgets the marks (and slow paths) recorded so far (after they were reported)."""
    with _lock:
        del _marks[:]
        del _slow[:]


def spawn_time():
    """When the launcher started this process (``TENPLEX_SPAWN_TIME``, seconds since the epoch), or None."""
    v = os.environ.get(SPAWN_ENV)
    try:
        return float(v) if v else None
    except ValueError:
        return None


def body(rank, step, taken, slow=()):
    """The report's JSON: ``rank``, ``step`` (the generation the reconfiguration moved), ``marks``, the
    ``slow`` paths where there are any and, for a process a launcher started, ``spawn``."""
    b = {"rank": int(rank), "step": int(step), "marks": [[p, t] for p, t in taken]}
    if slow:
        b["slow"] = [{"phase": p, "what": w, "why": y} for p, w, y in slow]
    if spawn_time() is not None and not _auto.get("live") and any(p in ("relaunch", "load", "first_step")
                                                                   for p, _ in taken):
        b["spawn"] = spawn_time()
    return b


def report(client, job, step, rank, background=True):
    """Sends the marks recorded so far for the reconfiguration that moved generation ``step`` to the
    daemon of ``client`` and forgets them. With ``background`` the request runs on its own thread (with its
    own connection) and a failure is logged; else it runs here and raises. Returns the thread, or the
    daemon's answer. The daemon keeps a report only for a resource change it ran that moved ``step`` (or
    waits for this rank's save of it), from a rank of that change's world, with marks inside the change's
    window, each phase once; anything else is refused (4xx) and the marks are forgotten all the same."""
    from .wire import routes

    job = job or os.environ.get("TENPLEX_JOB")
    if not job:
        log.warning("tenplex: no job to report the downtime of rank %s to (pass job= or set TENPLEX_JOB)", rank)
        return None
    with _lock:
        taken, slow = list(_marks), list(_slow)
        del _marks[:]
        del _slow[:]
    if not taken:
        return None
    payload = body(rank, step, taken, slow)
    if not background:
        return client.request("POST", routes.downtime_route(job), json=payload).json()
    own = client.clone()
    own.timeout = min(own.timeout or REPORT_TIMEOUT, REPORT_TIMEOUT)  # a process's exit waits for its reports

    def send():
        try:
            for attempt in range(BUSY_RETRIES + 1):
                try:
                    own.request("POST", routes.downtime_route(job), json=payload)
                    return
                except TenplexError as e:
                    if e.status not in (429, 503) or attempt == BUSY_RETRIES:
                        raise
                    time.sleep(0.2 * 2 ** attempt)  # the daemon is busy (many ranks report at once): again later
        except TenplexError as e:
            # 404: this daemon ran no change that moved the step (a rank of another worker's daemon in a
            # multi-worker job, or a change cancelled after the stop): nothing to join it with here
            (log.info if e.status == 404 else log.warning)(
                "tenplex: the downtime report of rank %s (step %s) was not taken: %s", rank, step, e)
        except Exception as e:  # noqa: BLE001 - a measurement never stops training
            log.warning("tenplex: the downtime report of rank %s (step %s) was not taken: %s", rank, step, e)
        finally:
            own.close()

    t = threading.Thread(target=send, name="tenplex-downtime-report", daemon=False)
    t.start()
    _reports.append(t)
    return t


def wait_reports(timeout=None):
    """Waits for this process's background reports (tests; a process's exit waits for them anyway)."""
    while _reports:
        _reports.pop().join(timeout)


# ---------------------------------------------------------------- the checkpoint calls' marks (relaunch mode)

def on_stop():
    """``should_stop`` answered true: the stop step has ended (marked once per stop)."""
    if not _auto["stopped"]:
        _auto["stopped"] = True
        mark("stop")


def on_saved(client, job, step, rank):
    """A save ended: after a stop it is the reconfiguration's save; the rank's marks go to its daemon
    (``client``: a client or a function that makes one)."""
    if _auto["stopped"]:
        _auto["stopped"] = False
        mark("save")
        report(client() if callable(client) else client, job, step, rank)


def on_load_start():
    _auto["load_started"] = time.time()


def on_regrouped():
    """A live rank re-formed its process groups in place: its next load is the reconfiguration's, marked
    and reported as a relaunched process's load is (with ``regroup`` and ``rebuild`` in place of ``relaunch``)."""
    _auto.update(loaded=None, asked=False, live=True, rebuild_pending=True)


def before_load():
    """Called by ``tenplex.load``: the first load after a live regroup marks the end of the model's
    rebuild (``train`` builds the model for the new configuration, then loads into it)."""
    if _auto["rebuild_pending"]:
        _auto["rebuild_pending"] = False
        mark("rebuild")


def on_loaded(step):
    """A load ended: a relaunched process's ``relaunch`` (to the load's start) and ``load`` are marked; a
    live rank's ``load`` after it re-formed its groups."""
    started, _auto["load_started"] = _auto["load_started"], None
    if started is None or _auto["loaded"] is not None:
        return
    _auto["loaded"] = int(step)
    if not _auto.get("live"):
        mark("relaunch", started)
    mark("load")


def on_step(client, job, step, rank):
    """A later step than the one loaded has ended (``step`` None: the caller does not say): the first
    step after the load is marked and the relaunched process's marks go to its daemon (``client``: a
    client or a function that makes one)."""
    loaded = _auto["loaded"]
    if loaded is None or loaded < 0:
        return
    if step is not None and int(step) <= loaded:
        return
    if step is None and not _auto.get("asked"):
        _auto["asked"] = True  # the first call after the load comes before the first step
        return
    _auto["loaded"] = -1  # reported once per process
    mark("first_step")
    report(client() if callable(client) else client, job, loaded, rank)
