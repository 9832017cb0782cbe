"""The checkpoint calls of a training job: :func:`save` (write the rank's state and seal it),
:func:`load` (the rank's newest state: its latest generation or a reconfiguration's output), :func:`should_stop` (the job's stop flag) and
the job's generations.

Configuration comes from arguments or the environment: ``TENPLEX_JOB``, and from a launcher
``RANK``, ``WORLD_SIZE``, ``TENPLEX_CONFIG`` (the parallel configuration as JSON) and
``TENPLEX_DAEMONS`` (worker number to daemon address, for clusters whose daemons do not know each
other); the daemon's address, token and CA as :class:`tenplex.Client` takes them."""

import json
import logging
import os

from . import codec, layout, torch_helpers
from .errors import NoCheckpoint
from .http_client import ERROR_CODE_HEADER, client_for
from .transfer import download, upload_entries

log = logging.getLogger("tenplex")


def _env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


def job_name(job):
    """``job``, else ``TENPLEX_JOB`` (``ValueError`` when neither is given)."""
    job = job or os.environ.get("TENPLEX_JOB")
    if not job:
        raise ValueError("no job: pass job= or set TENPLEX_JOB")
    return job


def _seal_body(world, config):
    body = {"world": world}
    if config is not None:
        body["config"] = config
    if os.environ.get("TENPLEX_DAEMONS"):  # every worker's daemon (from a launcher): all of them learn of the seal
        body["daemons"] = json.loads(os.environ["TENPLEX_DAEMONS"])
    return body


def save(state, job=None, step=0, rank=None, world=None, config=None, client=None, addr=None, token=None):
    """Saves one rank's ``state`` as step ``step`` of ``job`` and seals it.

    The tree goes to ``/job/<job>/save/<rank>/`` (replacing what the rank saved before); then the
    rank is sealed: when all ``world`` ranks of the step are sealed, the step becomes the job's
    complete generation (until then readers keep the previous one). A step is sealed once: saving
    a different state at a step the rank already sealed (e.g. twice with the default ``step=0``) is
    refused with :class:`TenplexError` (409, ``conflict``); pass the training step. ``state=None`` seals a rank that
    saves nothing (a data-parallel replica). ``rank``, ``world`` and ``config`` default to ``RANK``,
    ``WORLD_SIZE`` and ``TENPLEX_CONFIG``. Returns the daemon's seal answer (tensors, bytes,
    complete)."""
    c = client_for(client, addr, token)
    job = job_name(job)
    rank = _env_int("RANK", 0) if rank is None else rank
    world = _env_int("WORLD_SIZE", 1) if world is None else world
    if config is None and os.environ.get("TENPLEX_CONFIG"):
        config = json.loads(os.environ["TENPLEX_CONFIG"])
    prefix = layout.save_dir(job, rank)
    entries = None if state is None else codec.flatten(state)  # a refused state fails here, before any change
    c.request("DELETE", layout.dirs_route(prefix), ok=(200, 404), params={"recursive": "true"})
    if entries is not None:
        upload_entries(entries, prefix, c)
    return c.request("POST", layout.seal_route(job, step, rank), json=_seal_body(world, config)).json()


_last_loaded = None


def load(job=None, rank=None, client=None, addr=None, token=None, as_torch=None):
    """Loads the newest state there is for ``rank`` and returns ``(state, step)``.

    The daemon chooses (``GET /api/v1/jobs/<job>/load/<rank>``): the rank's tree of the job's latest
    complete generation (a restart on the same resources), unless the last reconfiguration prepared
    ``/job/<job>/load/<rank>/`` from a step at least as new. :func:`last_loaded` says which was
    loaded. Raises :class:`NoCheckpoint` when there is none (a first start)."""
    global _last_loaded
    c = client_for(client, addr, token)
    job = job_name(job)
    rank = _env_int("RANK", 0) if rank is None else rank
    r = c.request("GET", layout.load_route(job, rank), ok=(200, 404))
    if r.status_code == 404:
        reason = r.text.strip()
        raise NoCheckpoint("nothing to load for rank %d of job %s: %s" % (rank, job, reason), 404, reason,
                           r.headers.get(ERROR_CODE_HEADER))
    choice = r.json()
    state = download(choice["path"], c, as_torch)
    _last_loaded = {"job": job, "rank": rank, "step": int(choice["step"]), "source": choice["source"],
                    "path": choice["path"]}
    log.info("tenplex: rank %d of job %s loaded step %d from the %s at %s", rank, job, _last_loaded["step"],
             choice["source"], choice["path"])
    return state, _last_loaded["step"]


def last_loaded():
    """What the last :func:`load` of this process loaded: ``job``, ``rank``, ``step``, ``source``
    (``"generation"`` or ``"reconfiguration"``) and ``path``; ``None`` before any."""
    return None if _last_loaded is None else dict(_last_loaded)


def should_stop(job=None, step=None, group=None, client=None, addr=None, token=None):
    """Whether the job must stop now (save, then exit) because its resources change.

    ``step`` is the number of steps finished; a change announced for step S stops every rank once
    ``step >= S``. When ``torch.distributed`` is initialised, only rank 0 of ``group`` asks the
    daemon and the answer is broadcast, so all ranks agree; call it from every rank."""
    return torch_helpers.agree(lambda: _ask_stop(job, step, client, addr, token), group)


def _ask_stop(job, step, client, addr, token):
    c = client_for(client, addr, token)
    return bool(stop_state(job_name(job), step, c)["stop"])


def stop_state(job, step=None, client=None):
    """The daemon's answer about the job's stop flag: ``stop`` (for ``step``, when given), ``raised``
    and ``raises`` (how often it was raised)."""
    params = {} if step is None else {"step": str(int(step))}
    return client_for(client).request("GET", layout.stop_route(job), params=params).json()


def generations(job, client=None):
    """The daemon's answer about the job's generations (``current``: the complete one, or none)."""
    return client_for(client).request("GET", layout.generations_route(job)).json()
