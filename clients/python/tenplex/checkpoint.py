"""The checkpoint calls of a training job: :func:`save` (write the rank's state and seal it) and
:func:`load` (the rank's newest state: its latest generation or a reconfiguration's output).
:func:`should_stop` (the job's stop flag) and the job's generations are :mod:`tenplex.stop`'s, also
importable from here.

Configuration comes from arguments or the environment: ``TENPLEX_JOB``, and from a launcher
``RANK``, ``WORLD_SIZE``, ``TENPLEX_CONFIG`` (the parallel configuration as JSON) and
``TENPLEX_DAEMONS`` (worker number to daemon address, for clusters whose daemons do not know each
other); the daemon's address, token and CA as :class:`tenplex.Client` takes them."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple, Union

import json
import logging
import os

import numpy as np

from . import background_save, downtime
from .background_save import SaveHandle, wait_saves  # noqa: F401 (the training API's names, also from here)
from . import rules as rules_module
from .errors import ConfigMismatch, NoCheckpoint, TenplexError
from .rank_env import env_int, job_name
from .stop import generations, should_stop, stop_state  # noqa: F401 (the calls' former module)
from .wire import dtensor_layout, restore, routes, torch_values, tree_codec
from .wire import shared_memory as shm
from .wire.http_client import ERROR_CODE_HEADER, Client, client_for
from .wire.transfer import upload_entries

log = logging.getLogger("tenplex")


def _seal_body(world, config):
    body = {"world": world}
    if config is not None:
        body["config"] = config
    if os.environ.get("TENPLEX_DAEMONS"):  # every worker's daemon (from a launcher): all of them learn of the seal
        body["daemons"] = json.loads(os.environ["TENPLEX_DAEMONS"])
    return body


def save(state: Any, job: Optional[str] = None, step: int = 0, rank: Optional[int] = None,
         world: Optional[int] = None, config: Optional[Mapping[str, Any]] = None, client: Optional[Client] = None,
         addr: Optional[str] = None, token: Optional[str] = None, blocking: bool = True,
         shared: Optional[bool] = None, spec: Optional[Mapping[str, Any]] = None, rules: Any = None,
         rule_params: Optional[Mapping[str, Any]] = None,
         allow_pickle: bool = False) -> Union[Dict[str, Any], "SaveHandle"]:
    """Saves one rank's ``state`` as step ``step`` of ``job`` and seals it.

    The tree goes to ``/job/<job>/save/<rank>/`` (replacing what the rank saved before); then the
    rank is sealed: when all ``world`` ranks of the step are sealed, the step becomes the job's
    complete generation (until then readers keep the previous one). A step is sealed once: saving
    a different state at a step the rank already sealed (e.g. twice with the default ``step=0``) is
    refused with :class:`TenplexError` (409, ``conflict``); pass the training step. ``state=None`` seals a rank that
    saves nothing (a data-parallel replica). ``rank``, ``world`` and ``config`` default to ``RANK``,
    ``WORLD_SIZE`` and ``TENPLEX_CONFIG``.

    On the daemon's host the tensors are copied straight into the daemon's shared memory (from the
    GPU too) and published at once (:mod:`tenplex.wire.shared_memory`); elsewhere, or with ``shared=False``, they
    go over REST. ``shared=True`` insists on shared memory (an error when it is not usable).

    ``blocking=True`` returns the daemon's seal answer (tensors, bytes, complete). ``blocking=False``
    returns a :class:`SaveHandle` as soon as the state is copied (into shared memory, or into host
    memory for REST): training may change it at once; publishing, sealing and checksums run in the
    background. The next save (or load) waits for it first and raises its error, if it failed.

    ``spec`` (a model spec, e.g. from :func:`tenplex.describe`) is stored with the job by this
    process's first save of it (``/job/<job>/model.json`` on this rank's daemon), so that
    reconfigurations need no spec in their request. While a spec is stored, the daemon checks every
    seal that names a ``config`` against it: a tensor the spec places on the rank but saved with
    another dtype or shape than the spec's shard is refused with :class:`TenplexError` (400,
    ``bad_request``) naming the tensor, its partition and both shapes; nothing is sealed, and a save
    with a corrected spec (or state) at the same step seals.

    ``rules`` (partition rules, as for :func:`tenplex.describe`: a dict, a file, a shipped set's name
    or a list of them; ``rule_params`` fills their ``"${name}"`` numbers) are stored instead
    (``/job/<job>/rules.json``) when no spec is given: the daemon then infers the model from the
    shards of the job's newest complete generation at its first reconfiguration (docs/PTC.md). A job
    whose configurations all have T = P = 1 needs neither.

    A ``DTensor`` is stored as its local shard with its layout (global shape, device mesh, placements,
    this rank's mesh coordinate) recorded beside it, so that :func:`load` reshards it to another mesh
    without a spec; ``rank`` must then be the process's global rank (docs/CLIENTS.md, "DTensor states").

    Types other than the plain ones are recorded beside the tree so that :func:`load` gives back
    what ``torch.load`` would; a value that cannot be kept exactly raises ``TypeError`` (or
    ``ValueError`` for a key) naming its key before anything is written. ``allow_pickle=True`` stores
    such a value as a pickle instead (loading it then needs ``load(..., allow_pickle=True)``)."""
    wait_saves()
    c = client_for(client, addr, token)
    job = job_name(job)
    downtime.on_step(c, job, step, env_int("RANK", 0) if rank is None else rank)
    if spec is not None:
        _store_spec(c, job, spec)
    elif rules is not None:
        _store_spec(c, job, json.dumps(rules_module.stored_form(rules, rule_params)), routes.rules_file(job))
    rank = env_int("RANK", 0) if rank is None else rank
    world = env_int("WORLD_SIZE", 1) if world is None else world
    if config is None and os.environ.get("TENPLEX_CONFIG"):
        config = json.loads(os.environ["TENPLEX_CONFIG"])
    # a refused state fails here, before any change
    entries = None if state is None else dtensor_layout.for_save(tree_codec.flatten(state, allow_pickle), rank, world)
    seal = _seal_body(world, config)
    if not blocking:
        c = _own_client(c)
    global _last_saved
    via, copied = _copy_state(c, job, rank, step, entries, seal, shared, blocking)
    _last_saved = {"job": job, "rank": rank, "step": step, "via": via}
    finish = _marked(copied, c, job, step, rank)
    if blocking:
        return finish()
    return background_save.start(job, step, rank, finish)


def save_unconfigured(state, job, step, rank, world, client, shared=None):
    """A blocking :func:`save` of ``rank`` of a ``world``-rank step that has no parallel configuration (a DCP
    checkpoint's ranks): no ``TENPLEX_CONFIG`` in the seal, no spec or rules. The daemon's seal answer."""
    wait_saves()
    entries = None if state is None else tree_codec.flatten(state, False)
    return _copy_state(client, job, rank, step, entries, seal_body(world), shared, True)[1]()


def seal_body(world):
    """The seal of a rank of a step without a parallel configuration (told to ``TENPLEX_DAEMONS``' daemons)."""
    return _seal_body(world, None)


def _marked(finish, c, job, step, rank):
    """``finish``, then the downtime's save mark (when the save follows a stop: :mod:`tenplex.downtime`)."""
    def run():
        answer = finish()
        downtime.on_saved(c, job, step, rank)
        return answer
    return run


_specs_stored = {}


def _store_spec(c, job, spec, path=None):
    """Writes the model spec (or the rules, at ``path``) with the job once per process and daemon (a
    later save with the same one skips it; a changed one, e.g. corrected after the daemon refused a
    seal for it, is written again)."""
    path = path or routes.model_file(job)
    key = (c.addr, path)
    text = spec if isinstance(spec, str) else json.dumps(spec)
    if _specs_stored.get(key) == text:
        return
    c.request("PUT", routes.files_route(path), ok=(200, 201), params={"replace": "true"},
              data=text.encode("utf-8"), headers=c.upload_headers(text.encode("utf-8")))
    _specs_stored[key] = text


def _copy_state(c, job, rank, step, entries, seal, use_shared, blocking):
    """Copies the state where it goes (shared memory, or host memory for a REST save in the
    background); returns the way it went (``"shared_memory"`` or ``"rest"``) and what finishes the
    save (publish and seal)."""
    if entries is not None and use_shared is not False and shm.available(c):
        tensors = [(rel, obj) for rel, kind, obj in entries if kind == "tensor"]
        files = [(rel, payload) for rel, kind, payload in entries if kind == "file"]
        got = shm.reserve(c, job, rank, tensors, files)
        if got is not None:
            res, mapping = got
            try:
                shm.fill(mapping, res, tensors, files)
            except BaseException:
                shm.release(c, job, res["id"])
                raise
            order = [rel for rel, _, _ in entries]
            return "shared_memory", lambda: shm.commit(c, job, rank, res, step, seal, order)
    if use_shared is True and entries is not None:
        raise TenplexError("shared memory was asked for (shared=True), but the daemon at %s has none usable from "
                           "this process" % c.addr)
    if entries is not None and not blocking:
        entries = [(rel, kind, _snapshot(obj) if kind == "tensor" else obj) for rel, kind, obj in entries]
    return "rest", lambda: _rest_save(c, job, rank, step, entries, seal)


def _own_client(c):
    """A client like ``c`` with its own connection, for work on a background thread."""
    own = c.clone()
    if hasattr(c, "_shm_usable"):
        own._shm_usable = c._shm_usable
    return own


def _snapshot(obj):
    """A host copy of a tensor or array that later training steps do not change."""
    if torch_values.is_tensor(obj):
        return obj.detach().to("cpu", copy=True)
    return np.array(obj, copy=True)


def _rest_save(c, job, rank, step, entries, seal):
    prefix = routes.save_dir(job, rank)
    c.request("DELETE", routes.dirs_route(prefix), ok=(200, 404), params={"recursive": "true"})
    if entries is not None:
        upload_entries(entries, prefix, c)
    # the daemon refuses (409) to seal a tree that lost entries meanwhile, e.g. to a `tenplex rm` of the job
    seal = dict(seal, entries=0 if entries is None else len(entries))
    return c.request("POST", routes.seal_route(job, step, rank), json=seal).json()


_last_loaded = None
_last_saved = None


def load(job: Optional[str] = None, rank: Optional[int] = None, client: Optional[Client] = None,
         addr: Optional[str] = None, token: Optional[str] = None, as_torch: Optional[bool] = None, into: Any = None,
         shared: Optional[bool] = None, allow_pickle: bool = False,
         config: Optional[Mapping[str, Any]] = None) -> Tuple[Any, int]:
    """Loads the newest state there is for ``rank`` and returns ``(state, step)``.

    The daemon chooses (``GET /api/v1/jobs/<job>/load/<rank>``): the rank's tree of the job's latest
    complete generation (a restart on the same resources), unless the last reconfiguration prepared
    ``/job/<job>/load/<rank>/`` from a step at least as new. :func:`last_loaded` says which was
    loaded. Raises :class:`NoCheckpoint` when there is none (a first start).

    ``into``: an existing state (e.g. ``model.state_dict()``, on the GPU too): each of its tensors
    that the checkpoint has at the same place is filled in place (same dtype and shape, checked
    before anything is copied) and returned in the state; others are new tensors. On the daemon's
    host the bytes are copied straight from its shared memory (``shared`` as for :func:`save`).

    Values come back with the types they were saved with (docs/CLIENTS.md, "What round-trips"):
    ``as_torch=None`` gives torch tensors as torch tensors and numpy arrays as numpy; ``True`` every
    tensor as torch, ``False`` every tensor as numpy. ``allow_pickle=True`` loads leaves saved as
    pickles (``save(..., allow_pickle=True)``); a pickle runs code when loaded, so without it such a
    leaf raises :class:`TenplexError` naming its key.

    ``into`` holding ``DTensor``s: each is filled with the box of the global tensor its own mesh and
    placements give this rank, read from the job's newest complete generation whatever mesh saved it
    (:mod:`tenplex.dtensor_load`; no ``config`` check, no collective).

    ``config`` (default ``TENPLEX_CONFIG``): the rank's parallel configuration. A generation saved
    under another (T, P, D) (a job name used again, a relaunch before the reconfiguration) raises
    :class:`ConfigMismatch` naming both, before anything is read."""
    global _last_loaded
    downtime.before_load()
    wait_saves()
    downtime.on_load_start()
    c = client_for(client, addr, token)
    job = job_name(job)
    rank = env_int("RANK", 0) if rank is None else rank
    if config is None and os.environ.get("TENPLEX_CONFIG"):
        config = json.loads(os.environ["TENPLEX_CONFIG"])
    targets = {} if into is None else {rel: t for rel, kind, t in tree_codec.flatten(into) if kind == "tensor"}
    dtensors = {rel: t for rel, t in targets.items() if dtensor_layout.is_dtensor(t)}
    if dtensors:
        return _load_dtensors(c, job, rank, into, targets, dtensors, as_torch, shared, allow_pickle)
    choice, over_rest = None, []
    if shared is not False and shm.available(c):
        pinned = shm.pin(c, job, rank)
        if pinned is not None:
            try:
                _check_config(c, job, rank, pinned, config)
                state = restore.from_pin(c, pinned, targets, as_torch, allow_pickle, over_rest)
            finally:
                shm.release(c, job, pinned["id"])
            choice = pinned
    via = "shared_memory" if choice is not None else "rest"
    if choice is None:
        choice = _choice(c, job, rank)
        _check_config(c, job, rank, choice, config)
        state = restore.from_rest(c, choice["path"], targets, as_torch, allow_pickle, over_rest)
    _last_loaded = {"job": job, "rank": rank, "step": int(choice["step"]), "source": choice["source"],
                    "path": choice["path"], "via": via, "rest_tensors": len(over_rest),
                    "copied_bytes": int(choice.get("copiedBytes", 0))}
    if over_rest:
        _slow_load(c, rank, job, over_rest, choice, via, shared)
    log.info("tenplex: rank %d of job %s loaded step %d from the %s at %s", rank, job, _last_loaded["step"],
             choice["source"], choice["path"])
    downtime.on_loaded(_last_loaded["step"])
    return state, _last_loaded["step"]


def _load_dtensors(c, job, rank, into, targets, dtensors, as_torch, shared, allow_pickle):
    """A load into a state that holds DTensors: resharded from the newest generation (:mod:`tenplex.dtensor_load`)."""
    global _last_loaded
    from . import dtensor_load
    others = {rel: t for rel, t in targets.items() if rel not in dtensors}
    state, _last_loaded = dtensor_load.load(c, job, rank, into, others, dtensors, as_torch, allow_pickle, shared)
    log.info("tenplex: rank %d of job %s loaded step %d: %d DTensors resharded from saved ranks %s (%d pieces)",
             rank, job, _last_loaded["step"], _last_loaded["dtensors"], _last_loaded["from_ranks"],
             _last_loaded["pieces"])
    downtime.on_loaded(_last_loaded["step"])
    return state, _last_loaded["step"]


def _slow_load(c, rank, job, over_rest, choice, via, shared):
    """A load that read tensors over REST: why (the daemon's reason, or why shared memory was not used),
    in the rank's log (a warning where shared memory could have served it), :func:`last_loaded` and the
    rank's next downtime report."""
    if via == "shared_memory":
        why = choice.get("restReason") or "the daemon holds them outside shared memory"
    elif shared is False or not shm.enabled():
        why = "shared memory turned off (%s)" % ("shared=False" if shared is False else "TENPLEX_SHM=0")
    else:
        why = getattr(c, "_shm_why", None) or "shared memory not usable with this daemon"
    what = "%d of the loaded tensors over REST" % len(over_rest) if via == "shared_memory" else \
        "all %d tensors over REST" % len(over_rest)
    _last_loaded["rest_reason"] = why
    expected = shared is False or not shm.enabled()
    (log.info if expected else log.warning)("tenplex: rank %d of job %s read %s, not from shared memory: %s",
                                            rank, job, what, why)
    if not expected:
        downtime.note_slow("load", what, why)


def _tpd(config):
    return tuple(int(config.get(k, 1)) for k in ("tp", "pp", "dp"))


def _check_config(c, job, rank, choice, config):
    """Refuses a generation saved under another (T, P, D) than the rank's ``config``."""
    if config is None or choice.get("source") != "generation":
        return
    step = int(choice["step"])
    saved = next((g.get("config") for g in generations(job, c).get("generations", ()) if int(g["step"]) == step), None)
    if not isinstance(saved, dict) or _tpd(saved) == _tpd(config):
        return
    raise ConfigMismatch("rank %d of job %s runs under (T,P,D)=%s, but the job's generation %d was saved under "
                         "(T,P,D)=%s: reconfigure the job to the new configuration first, or use another job name "
                         "(or remove the finished job with `tenplex rm %s`; tenplex.load does not load state cut for "
                         "another configuration)" % (rank, job, _tpd(config), step, _tpd(saved), job))


def _choice(c, job, rank):
    r = c.request("GET", routes.load_route(job, rank), ok=(200, 404))
    if r.status_code == 404:
        reason = r.text.strip()
        raise NoCheckpoint(NoCheckpoint.message(rank, job, reason), 404, reason,
                           r.headers.get(ERROR_CODE_HEADER))
    return r.json()


def last_loaded() -> Optional[Dict[str, Any]]:
    """What the last :func:`load` of this process loaded: ``job``, ``rank``, ``step``, ``source``
    (``"generation"`` or ``"reconfiguration"``), ``path``, ``via`` (``"shared_memory"``: pinned in
    the daemon's shared memory, or ``"rest"``) and ``rest_tensors`` (how many tensors were read over
    REST: all of a REST load; in a pinned load those the daemon holds outside shared memory) with
    ``rest_reason`` (why) where there were any, and ``copied_bytes`` (what the daemon copied into
    shared memory for this load: 0 when every tensor was mapped where it lies, as a saved or moved
    state is); ``None`` before any."""
    return None if _last_loaded is None else dict(_last_loaded)


def last_saved() -> Optional[Dict[str, Any]]:
    """How the last :func:`save` of this process went: ``job``, ``rank``, ``step`` and ``via``
    (``"shared_memory"``: copied into a segment the daemon reserved, or ``"rest"``), known once the
    state is copied (before an asynchronous save has ended); ``None`` before any."""
    return None if _last_saved is None else dict(_last_saved)
