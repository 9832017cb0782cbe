"""The job's stop flag and generations as a rank asks for them: :func:`should_stop` (whether to save and
stop now because the job's resources change, agreed by every rank), :func:`stop_seen` (whether it said stop
in this process, which :func:`tenplex.elastic` reads), and the daemon's :func:`stop_state` and
:func:`generations` of a job."""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import downtime, rendezvous_exit
from .errors import TenplexError, UnknownJob
from .rank_env import env_int, job_name, watch_launcher
from .wire import routes, torch_values
from .wire.http_client import Client, client_for


def should_stop(job: Optional[str] = None, step: Optional[int] = None, group: Any = None,
                client: Optional[Client] = None, addr: Optional[str] = None, token: Optional[str] = None) -> bool:
    """Whether the job must stop now (save, then exit) because its resources change.

    ``step`` is the number of steps finished; a change announced for step S stops every rank once
    ``step >= S``. When ``torch.distributed`` is initialised, only rank 0 of ``group`` asks the
    daemon and the answer is broadcast, so all ranks agree; call it from every rank.

    It also marks a reconfiguration's downtime (:mod:`tenplex.downtime`): the first step after a load
    and the stop step. Under ``tenplex run`` the rank ends when the launcher is gone
    (:func:`tenplex.rank_env.watch_launcher`); under ``torchrun --rdzv-backend tenplex`` a rank told to stop
    for a change of the job's nodes waits at exit for its agent to start the next round
    (:mod:`tenplex.rendezvous_exit`)."""
    global _stop_seen
    watch_launcher()
    stop = torch_values.agree(lambda: _ask_stop(job, step, client, addr, token), group)
    downtime.on_step(lambda: client_for(client, addr, token), job, step, env_int("RANK", 0))
    if stop:
        downtime.on_stop()
        rendezvous_exit.hold_after_stop()
    _stop_seen = _stop_seen or stop
    return stop


_stop_seen = False


def stop_seen() -> bool:
    """Whether :func:`should_stop` said stop in this process since :func:`reset_stop` (tenplex.live
    tells a stop for a resource change from the end of training by it)."""
    return _stop_seen


def reset_stop() -> None:
    global _stop_seen
    _stop_seen = False


def _ask_stop(job, step, client, addr, token):
    c = client_for(client, addr, token)
    return bool(stop_state(job_name(job), step, c)["stop"])


def stop_state(job: str, step: Optional[int] = None, client: Optional[Client] = None) -> Dict[str, Any]:
    """The daemon's answer about the job's stop flag: ``stop`` (for ``step``, when given), ``raised``
    and ``raises`` (how often it was raised)."""
    params = {} if step is None else {"step": str(int(step))}
    return _of_job(job, lambda c: c.request("GET", routes.stop_route(job), params=params).json(), client)


def generations(job: str, client: Optional[Client] = None) -> Dict[str, Any]:
    """The daemon's answer about the job's generations (``current``: the complete one, or none)."""
    return _of_job(job, lambda c: c.request("GET", routes.generations_route(job)).json(), client)


def _of_job(job, ask, client):
    """``ask(client)``; a job the daemon does not know raises :class:`UnknownJob`, which names the
    jobs it knows, instead of an answer that would keep a rank running forever."""
    c = client_for(client)
    try:
        return ask(c)
    except TenplexError as e:
        if e.status == 404 and e.code == "not_found":  # the route exists: only the job can be missing
            raise UnknownJob("job %r is not known to the tenplex daemon at %s: %s" % (job, c.addr, e.reason),
                             e.status, e.reason, e.code) from None
        raise
