"""Staging a DCP ``async_save`` straight into the daemon's shared memory (:class:`tenplex.dcp.Writer` as
DCP's ``AsyncStager``).

``stage`` reserves one segment for the rank's tensors (a DTensor's local shard), copies them in, and
gives DCP a state whose tensors are views of that segment (DTensors rebuilt around them), so training may
change its own tensors as soon as ``async_save`` returns. The save that DCP then runs in the background
finds each item's tensor in the segment and commits the reservation as the rank's tree: no second copy.
When an item is not one of the staged tensors (a planner that transforms data), the reservation is
released and the rank is saved by copying, as without staging."""

import logging

from . import checkpoint
from .wire import shared_memory as shm
from .wire import tree_codec

log = logging.getLogger("tenplex")


def _tensor_leaves(obj, out):
    """Every tensor of a nested state (dicts, lists, tuples), in a fixed order."""
    import torch
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _tensor_leaves(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _tensor_leaves(v, out)
    return out


def _local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def _rebuilt(obj, views):
    """``obj`` with each tensor replaced by its staged view (DTensors around it), others kept."""
    import torch
    if isinstance(obj, torch.Tensor):
        view = views[id(obj)]
        if hasattr(obj, "to_local"):
            from torch.distributed.tensor import DTensor
            return DTensor.from_local(view, obj.device_mesh, obj.placements, run_check=False, shape=obj.shape,
                                      stride=obj.stride())
        return view
    if isinstance(obj, dict):
        return {k: _rebuilt(v, views) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rebuilt(v, views) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_rebuilt(v, views) for v in obj)
    return obj


class Staged:
    """A rank's tensors in one reserved segment, waiting for DCP's save to commit them."""

    def __init__(self, client, job, rank, res, names, views):
        self.client, self.job, self.rank, self.res = client, job, rank, res
        self._names = names
        self._by_ptr = {v.data_ptr(): (n, v) for n, v in zip(names, views) if v.numel()}
        self._empty = [(n, v) for n, v in zip(names, views) if not v.numel()]
        self._ended = False

    def keys_for(self, tensors):
        """The staged entry of each tensor (each must be a whole staged view; an empty tensor is any
        staged empty one of its dtype and shape), or ``None``."""
        keys, empty = [], list(self._empty)
        for t in tensors:
            if not t.numel():
                got = next((e for e in empty if e[1].shape == t.shape and e[1].dtype == t.dtype), None)
                if got is not None:
                    empty.remove(got)
            else:
                got = self._by_ptr.get(t.data_ptr())
            if got is None or got[1].shape != t.shape or got[1].dtype != t.dtype or not t.is_contiguous():
                return None
            keys.append(got[0])
        return keys

    def commit(self, step, world):
        """Publishes the segment as the rank's tree and seals it (the daemon's answer)."""
        self._ended = True
        return shm.commit(self.client, self.job, self.rank, self.res, step, checkpoint.seal_body(world), self._names)

    def release(self):
        if not self._ended:
            self._ended = True
            shm.release(self.client, self.job, self.res["id"])


def stage_in_host(state_dict):
    """``state_dict`` with every tensor copied into host memory (DTensors around the copies of their local
    shards): DCP's own staging does not copy tensors already on the CPU, which training would then change."""
    import torch
    copies = {id(t): _local(t).detach().to("cpu", copy=True) for t in _tensor_leaves(state_dict, [])
              if isinstance(t, torch.Tensor)}
    return _rebuilt(state_dict, copies)


def stage(client, job, rank, state_dict):
    """``(staged state, Staged)``, or ``None`` when the daemon's shared memory is not usable from here."""
    if not shm.available(client):
        return None
    tensors = _tensor_leaves(state_dict, [])
    seen, unique = set(), []
    for t in tensors:  # a tensor held twice is staged once
        if id(t) not in seen:
            seen.add(id(t))
            unique.append(t)
    locals_ = [_local(t).detach() for t in unique]
    names = [tree_codec.flatten({"s%d" % i: t}, False)[0][0] for i, t in enumerate(locals_)]
    got = shm.reserve(client, job, rank, list(zip(names, locals_)))
    if got is None:
        return None
    res, m = got
    try:
        shm.fill(m, res, list(zip(names, locals_)))
        views = [shm.torch_view_of(m, dict(placed, dtype=shm.spec(t)[0], shape=list(t.shape)))
                 for placed, t in zip(res["tensors"], locals_)]
        if any(v is None for v in views):
            raise ValueError("a dtype torch cannot view")
    except BaseException:
        shm.release(client, job, res["id"])
        raise
    return _rebuilt(state_dict, {id(t): v for t, v in zip(unique, views)}), Staged(client, job, rank, res, names, views)
