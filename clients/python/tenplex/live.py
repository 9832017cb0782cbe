"""Live reconfiguration: a rank keeps its process across a change of the job's parallelism.

``tenplex.elastic(train)`` runs the training function ``train(cfg)`` under the rank's configuration
(:class:`Config`). ``train`` builds the model partition and optimizer for ``cfg``, loads with
``tenplex.load`` (``into=`` the rebuilt tensors), trains from the loaded step and returns once
``tenplex.should_stop`` said stop and it has saved (or when training is done).

* **Relaunch mode** (the default; ``TENPLEX_LIVE`` unset): ``elastic`` forms the process group
  (``env://``), calls ``train`` once, ends the group and returns what ``train`` returned: the process
  exits and the launcher relaunches every rank under the next configuration, as before.
* **Live mode** (``tenplex run --live`` sets ``TENPLEX_LIVE=1``): when ``train`` returned because of a
  stop, the rank waits in the launcher's rendezvous store (:mod:`tenplex.launchers.store_host`) for the
  daemon's commit of the resource change, which the launcher hands out as the rank's new role: a rank
  below the new world size keeps its rank, ends its process groups, forms them again with the new
  world size and calls ``train`` with the new configuration (the launcher starts the added ranks); a
  rank at or above the new world size leaves (exit status 0). When a rank cannot continue in place
  the launcher says ``relaunch`` instead and every rank exits 0 (it has saved), to be relaunched.

The keys, per reconfiguration ``n`` of the run (1, 2, ...): ``tenplex/live/<n>`` (the role, JSON, set
by the launcher), ``tenplex/live/<n>/waiting`` (a counter of the ranks that saved and wait) and
``<prefix>/regrouped`` (of the ranks that formed the group under ``prefix``), which the launcher reads.
Anyone who reaches the store can set a key, so a rank acts only on a role whose MAC verifies with the
secret its launcher gave it (``TENPLEX_LIVE_SECRET``, taken out of the environment when ``elastic``
starts; :mod:`tenplex.live_auth`): any other value makes it raise :class:`TenplexError`, so that its
launcher sees a failed rank. docs/LIVE.md has the whole protocol."""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, TypeVar

import datetime
import gc
import json
import os
import sys

from . import checkpoint, downtime, live_auth, stop
from .c10d import tcp_store
from .errors import TenplexError
from .rank_env import watch_launcher
from .wire import torch_values

T = TypeVar("T")


class Config:
    """A rank's configuration: ``rank``, ``world``, the degrees ``tp``, ``pp``, ``dp``, the rank's
    coordinates ``tp_rank``, ``dp_rank``, ``pp_rank`` (Megatron's order: tensor fastest, then data,
    then pipeline), ``local_rank``, ``placement`` (``TENPLEX_CONFIG``, with the devices, or None),
    ``live`` (live mode) and ``reconfigurations`` (live reconfigurations this process went through)."""

    def __init__(self, rank: int, world: int, tp: int, pp: int, dp: int, local_rank: Optional[int] = None,
                 placement: Optional[Dict[str, Any]] = None, live: bool = False, reconfigurations: int = 0) -> None:
        if tp * pp * dp != world:
            raise ValueError("T*P*D = %d*%d*%d is not the world size %d" % (tp, pp, dp, world))
        if not 0 <= rank < world:
            raise ValueError("rank %d is not in [0, %d)" % (rank, world))
        self.rank, self.world, self.tp, self.pp, self.dp = rank, world, tp, pp, dp
        self.tp_rank, self.dp_rank, self.pp_rank = rank % tp, (rank // tp) % dp, rank // (tp * dp)
        self.local_rank = rank if local_rank is None else local_rank
        self.placement, self.live, self.reconfigurations = placement, live, reconfigurations

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None) -> "Config":
        env = os.environ if env is None else env
        world = int(env.get("WORLD_SIZE", 1))
        tp, pp = int(env.get("TENPLEX_TP", 1)), int(env.get("TENPLEX_PP", 1))
        dp = int(env.get("TENPLEX_DP", world // (tp * pp)))
        placement = json.loads(env["TENPLEX_CONFIG"]) if env.get("TENPLEX_CONFIG") else None
        return cls(int(env.get("RANK", 0)), world, tp, pp, dp, int(env.get("LOCAL_RANK", env.get("RANK", 0))),
                   placement, live_mode(env))

    def __repr__(self):
        return "Config(rank=%d, world=%d, (T,P,D)=(%d,%d,%d), live=%s)" % (
            self.rank, self.world, self.tp, self.pp, self.dp, self.live)


def live_mode(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether the launcher runs this rank live (``TENPLEX_LIVE=1``)."""
    return (os.environ if env is None else env).get("TENPLEX_LIVE", "") in ("1", "true", "True")


def _seconds(name, default):
    v = os.environ.get(name)
    return float(v) if v not in (None, "") else default


def elastic(train: Callable[[Config], T], backend: str = "gloo") -> T:
    """Runs ``train(cfg)`` under this rank's configuration, again after each live reconfiguration
    (module docstring); returns what its last call returned. ``backend``: the process groups'
    (``gloo`` or ``nccl``)."""
    import torch.distributed as dist

    watch_launcher()  # a rank of tenplex run does not outlive it
    cfg = Config.from_env()
    if not cfg.live:
        dist.init_process_group(backend, rank=cfg.rank, world_size=cfg.world)
        try:
            return train(cfg)
        finally:
            torch_values.destroy_group(dist)  # an asynchronous save still running ends before exit (atexit)
    secret = os.environ.pop("TENPLEX_LIVE_SECRET", None) or None  # not inherited by what train starts
    store = _store(_seconds("TENPLEX_LIVE_TIMEOUT", 900.0))
    n = int(os.environ.get("TENPLEX_LIVE_NEXT", "1"))
    if os.environ.get("TENPLEX_LIVE_WAIT") == "1":  # an added rank started ahead: its role comes with the commit
        cfg = _take_role(dist, backend, (store, secret), n, cfg, grouped=False)
        n += 1
    else:
        _form(dist, backend, store, os.environ["TENPLEX_LIVE_PREFIX"], cfg, mark=False)
    while True:
        stop.reset_stop()
        result = train(cfg)
        checkpoint.wait_saves()
        if not stop.stop_seen():
            torch_values.destroy_group(dist)
            return result
        gc.collect()  # the last configuration's tensors held in cycles, freed while the daemon moves the state
        cfg = _take_role(dist, backend, (store, secret), n, cfg, grouped=True)
        n += 1


def end_process_group(group: Any = None) -> None:
    """``torch.distributed.destroy_process_group(group)`` that cannot hang on torch 2.x's gloo: torch up
    to 2.7 destroys a group holding the GIL while it waits for gloo's threads, one of which may need the
    GIL to free a tensor a collective just used (``torch_values.destroy_group``). :func:`elastic`
    ends its groups this way; call it where a script ends its own."""
    import torch.distributed as dist

    torch_values.destroy_group(dist, group)


def _take_role(dist, backend, authenticated, n, cfg, grouped):
    """Waits for reconfiguration ``n``'s role and takes it: the configuration to train under next (the
    process exits 0 when it leaves or is relaunched). ``authenticated``: (the store, the launcher's
    secret). ``grouped``: the rank is in a group to end first."""
    store, secret = authenticated
    role = _wait_for_role(store, n, cfg, secret)
    downtime.mark("commit")
    if grouped and "relaunch" not in role and "leave" not in role and role["world"] == cfg.world:
        return _keep_group(dist, store, role, cfg)
    if grouped:
        torch_values.destroy_group(dist)
    if "relaunch" in role:
        _say(cfg, "relaunched by the launcher: %s" % role["relaunch"])
        sys.exit(0)
    if cfg.rank >= role["world"] or "leave" in role:
        _say(cfg, "leaves: %s" % role.get("leave", "the new world size is %d" % role["world"]))
        sys.exit(0)
    cfg = _adopt(role, cfg)
    _form(dist, backend, store, role["prefix"], cfg, mark=True)
    return cfg


def _keep_group(dist, store, role, cfg):
    """The same ranks continue in the same processes (the world size is unchanged): the default group is
    already the new one, so it stays (no rendezvous; with NCCL the communicator is kept). The training
    function's own groups, made for the old configuration, are ended; it makes those of the new one."""
    _end_subgroups(dist)
    cfg = _adopt(role, cfg)
    store.add(role["prefix"] + "/regrouped", 1)
    downtime.mark("regroup")
    downtime.on_regrouped()
    return cfg


def _end_subgroups(dist):
    """Ends every process group but the default one (torch keeps them in a private table: 1.13's
    ``_pg_map``, 2.x's ``_world.pg_map``; where neither is found they are left to the garbage collector)."""
    c10d = dist.distributed_c10d
    world = getattr(c10d, "_world", None)
    table = getattr(world, "pg_map", None) if world is not None else getattr(c10d, "_pg_map", None)
    default = c10d._get_default_group()
    for g in list(table or ()):
        if g is not default:
            torch_values.destroy_group(dist, g)


def _store(timeout):
    """A client of the launcher's rendezvous store (``MASTER_ADDR``, ``MASTER_PORT``)."""
    import torch.distributed as dist

    return tcp_store(dist, os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ["MASTER_PORT"]), None, False,
                     datetime.timedelta(seconds=timeout))


def _wait_for_role(store, n, cfg, secret):
    """The launcher's answer for reconfiguration ``n`` (after the daemon's commit, or a relaunch), once it
    verifies (:func:`tenplex.live_auth.open_role`)."""
    key = "tenplex/live/%d" % n
    store.add(key + "/waiting", 1)
    try:
        value = store.get(key).decode("utf-8", "replace")
    except RuntimeError as e:  # the store's timeout (or the launcher is gone)
        raise TenplexError("rank %d: no answer for live reconfiguration %d from the launcher's store in %.0f s "
                           "(TENPLEX_LIVE_TIMEOUT): %s" % (cfg.rank, n, _seconds("TENPLEX_LIVE_TIMEOUT", 900.0),
                                                           e)) from e
    return live_auth.open_role(value, secret, os.environ.get("TENPLEX_JOB", ""), n, cfg.rank)


def _adopt(role, old):
    """The configuration of ``role`` for this rank (same rank), also put in the environment so that
    ``tenplex.save``/``load`` and the user's code see it as a relaunched rank would."""
    cfg = role["config"]
    os.environ.update({"WORLD_SIZE": str(role["world"]), "TENPLEX_TP": str(cfg["tp"]), "TENPLEX_PP": str(cfg["pp"]),
                       "TENPLEX_DP": str(cfg["dp"]), "TENPLEX_CONFIG": json.dumps(cfg),
                       "TENPLEX_SEGMENT": str(role.get("segment", ""))})
    return Config(old.rank, role["world"], cfg["tp"], cfg["pp"], cfg["dp"], old.local_rank, cfg, True,
                  old.reconfigurations + 1)


def _form(dist, backend, store, prefix, cfg, mark):
    """Forms the default process group of ``cfg`` in the store under ``prefix``; a rank that does
    not come within ``TENPLEX_REGROUP_TIMEOUT`` seconds fails it (the launcher then relaunches)."""
    timeout = datetime.timedelta(seconds=_seconds("TENPLEX_REGROUP_TIMEOUT", 120.0))
    try:
        dist.init_process_group(backend, store=dist.PrefixStore(prefix, store), rank=cfg.rank,
                                world_size=cfg.world, timeout=timeout)
    except RuntimeError as e:
        raise TenplexError("rank %d: the process group of %d ranks (%s) did not form in %.0f s "
                           "(TENPLEX_REGROUP_TIMEOUT): %s" % (cfg.rank, cfg.world, prefix, timeout.total_seconds(),
                                                              e)) from e
    store.add(prefix + "/regrouped", 1)
    if mark:
        downtime.mark("regroup")
        downtime.on_regrouped()


def _say(cfg, what):
    print("tenplex: rank %d %s" % (cfg.rank, what), flush=True)
