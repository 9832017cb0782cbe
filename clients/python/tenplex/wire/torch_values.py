"""What the client does with torch, which is optional: tensors to and from numpy (bf16 as its bit
patterns, device tensors copied to the CPU), the distributed agreement of ``should_stop``, and an
optimizer's state keyed by parameter name so that it reshards with its parameter."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Tuple

import numpy as np

try:
    import torch
except ImportError:  # torch is optional
    torch = None


def available():
    return torch is not None


def is_tensor(x):
    return torch is not None and isinstance(x, torch.Tensor)


def to_numpy(t):
    """A tensor's values as ``(contiguous numpy array, is_bf16)``, without a copy where it can.

    bf16 (not a numpy dtype) comes as its ``uint16`` bit patterns; a tensor on a device is copied to
    the CPU first."""
    if t.requires_grad:  # numpy() refuses a tensor that requires grad; detach() costs more than the check
        t = t.detach()
    if not t.is_cpu:
        t = t.cpu()
    t = t.contiguous()
    if t.is_conj() or t.is_neg():  # a lazy conjugate or negative view (x.conj()): numpy() refuses it
        t = t.resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16), True
    return t.numpy(), False


def joinable(t):
    """Whether ``t`` can be joined with others of its dtype by :func:`joined_bytes`: a plain dense tensor in
    host memory with values (a subclass, a DTensor's local view or a device tensor goes alone)."""
    return type(t) is torch.Tensor and t.is_cpu and t.layout is torch.strided and t.numel() > 0


def joined_bytes(tensors):
    """The values of ``tensors`` (of one dtype, each :func:`joinable`) one after the other, in C order, as one
    new buffer's bytes: one call into torch for all of them rather than a view of each (the values are copied
    once either way, here or into a batch's block). bf16 comes as its bit patterns."""
    with torch.no_grad():
        flat = _flatten(tensors)
    if flat.dtype == torch.bfloat16:
        flat = flat.view(torch.int16)
    return memoryview(flat.numpy()).cast("B")


def _flatten(tensors):
    fast = getattr(getattr(torch._C, "_nn", None), "flatten_dense_tensors", None)
    if fast is not None:
        return fast(tensors)  # torch 1.x and 2.x: torch._utils._flatten_dense_tensors calls it
    return torch.cat([t.reshape(-1) for t in tensors])


def from_numpy(a, short):
    """A numpy array read from the daemon as a torch tensor sharing its memory (``short`` is the
    daemon's dtype: ``bf16`` arrays hold bit patterns); the array itself for a dtype this torch
    does not have (u16, u32 and u64 before torch 2.3)."""
    if short == "bf16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    try:
        return torch.from_numpy(a)
    except TypeError:
        return a


def as_numpy(t):
    """A CPU tensor read from the daemon as the numpy array sharing its memory (bf16: its bit
    patterns)."""
    return to_numpy(t)[0]


_SHORT = {}


def short_dtype(dtype):
    """The daemon's name of a torch dtype, ``None`` for one it cannot store (quantized, float8, ...)."""
    if not _SHORT:
        _SHORT.update({torch.bool: "bool", torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16",
                       torch.int32: "i32", torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16",
                       torch.float32: "f32", torch.float64: "f64", torch.complex64: "c64",
                       torch.complex128: "c128"})
    return _SHORT.get(dtype)


# ---------------------------------------------------------------- torch.distributed

def _distributed():
    """``torch.distributed`` when it is initialised, else ``None``."""
    dist = torch.distributed if torch is not None and torch.distributed.is_available() else None
    return dist if dist is not None and dist.is_initialized() else None


def _first_rank(dist, group):
    if group is None:
        return 0
    if hasattr(dist, "get_global_rank"):
        return dist.get_global_rank(group, 0)
    return sorted(dist.get_process_group_ranks(group))[0]


def device_kind_for_backend(backend):
    """``"cpu"`` or ``"cuda"``: where a flag broadcast over a group with ``backend`` (the string
    ``torch.distributed.get_backend`` answers) must live. NCCL serves only CUDA tensors; a mixed
    backend (``"cpu:gloo,cuda:nccl"``) serves CPU tensors when it names one for ``cpu``."""
    b = str(backend).lower()
    if ":" in b:
        devices = dict(part.split(":", 1) for part in b.split(",") if ":" in part)
        return "cpu" if "cpu" in devices else "cuda"
    return "cuda" if b == "nccl" else "cpu"


def flag_device(group=None):
    """The device of a tensor broadcast over ``group`` (the default group for ``None``): the current
    CUDA device for an NCCL group, the CPU for gloo and for mixed groups that serve the CPU."""
    backend = torch.distributed.get_backend(group)
    if device_kind_for_backend(backend) == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def agree(ask, group=None):
    """``ask()`` (a bool) on the group's first rank, broadcast to the group's ranks; just ``ask()``
    without an initialised ``torch.distributed``. Every rank of the group must call it; the flag
    lives on the group's device (:func:`flag_device`)."""
    dist = _distributed()
    if dist is None:
        return ask()
    src = _first_rank(dist, group)
    flag = torch.zeros(1, dtype=torch.int32, device=flag_device(group))
    if dist.get_rank() == src:
        flag[0] = int(ask())
    dist.broadcast(flag, src=src, group=group)
    # gloo's worker thread drops its reference to the flag after the broadcast returns. Were ours gone
    # first, that thread would free the tensor's Python object and need the GIL, which
    # destroy_process_group holds while it joins the thread: a deadlock seen under torch 2.6. The
    # last flag stays referenced here until the next call replaces it.
    _LAST_FLAG[:] = [flag]
    return bool(flag[0])


_LAST_FLAG = []


def destroy_group(dist, group=None):
    """``dist.destroy_process_group(group)`` without torch 2.x's deadlock: there the group's wrapper is
    destroyed holding the GIL and joins gloo's worker threads, one of which may need the GIL to free
    a tensor that the caller's code dropped right after a collective (``x = tensor(...);
    all_reduce(x)`` in a loop that then ends): a hang seen about once in ten under torch 2.6. The
    group's backends are held here until the wrapper is gone; their own Python objects release the
    GIL when they are destroyed, so the threads are joined without it. torch 1.13's groups are their
    own backends and are destroyed the same way."""
    c10d = dist.distributed_c10d
    pg = group if group is not None else c10d._get_default_group()
    # destroying the default group destroys every group (a DeviceMesh's subgroups too): hold them all
    world = getattr(c10d, "_world", None)  # torch 2.x; torch 1.13 keeps the map in the module
    every = world.pg_map if world is not None else getattr(c10d, "_pg_map", {})
    groups = [pg] + ([g for g in list(every) if g is not pg] if group is None or group is c10d.GroupMember.WORLD
                     else [])
    # (no loop variable may keep a group past the clears below: one dropped at return would be destroyed
    # holding the GIL, the very deadlock this avoids)
    backends = [b for b in (_backend(g, d) for g in groups for d in ("cpu", "cuda")) if b is not None]
    dist.destroy_process_group(group)
    del pg, group
    groups.clear()  # the wrappers first (their backends stay referenced), then the backends
    backends.clear()


def _backend(group, device):
    """The group's backend for ``device``, or ``None`` (none there, or torch 1.13, whose groups are their own)."""
    try:
        return group._get_backend(torch.device(device))
    except (AttributeError, RuntimeError, ValueError):
        return None


# ---------------------------------------------------------------- optimizer state by parameter name

def _names(named_parameters):
    """id -> every name of the parameter (a tied weight has several, e.g. an embedding and its head)."""
    items = named_parameters.items() if isinstance(named_parameters, dict) else named_parameters
    out = {}
    for n, p in items:
        out.setdefault(id(p), []).append(n)
    return out


def _positions(optimizer, sd, names):
    """The optimizer's state positions to parameter names (every name of a tied parameter)."""
    pos_to_name = {}
    for group, sd_group in zip(optimizer.param_groups, sd["param_groups"]):
        for p, pos in zip(group["params"], sd_group["params"]):
            if id(p) not in names:
                raise ValueError("an optimizer parameter has no name in named_parameters")
            pos_to_name[pos] = names[id(p)]
    return pos_to_name


def optimizer_state_by_name(optimizer: Any, named_parameters: Iterable[Tuple[str, Any]]) -> Dict[str, Any]:
    """``optimizer.state_dict()`` keyed by parameter name, so that it reshards with its parameter.

    Returns ``{<state key>: {<param name>: tensor}, ..., "param_groups": [...]}``: e.g. Adam's
    ``exp_avg`` and ``exp_avg_sq`` per parameter. A per-parameter 0-d value that is equal for every
    parameter (Adam's ``step``) is kept once, as a float, under its key. ``param_groups`` keeps each
    group's settings without its parameter positions. Saved as ``state["optimizer"]``, a tensor is
    keyed ``optimizer.<state key>.<param name>`` (describe it with its parameter's partition). A
    parameter given under several names (a tied weight) has its state under each of them."""
    sd = optimizer.state_dict()
    pos_to_name = _positions(optimizer, sd, _names(named_parameters))
    out = {}
    scalars = {}
    for pos, st in sd["state"].items():
        for k, v in st.items():
            for name in pos_to_name[pos]:
                if torch is not None and isinstance(v, torch.Tensor) and v.dim() > 0:
                    out.setdefault(k, {})[name] = v
                else:
                    scalars.setdefault(k, {})[name] = float(v) if not isinstance(v, (bool, str)) else v
    for k, per in scalars.items():
        values = set(per.values())
        out[k] = values.pop() if len(values) == 1 else per
    out["param_groups"] = [{k: v for k, v in g.items() if k != "params"} for g in sd["param_groups"]]
    return out


def _param_state(names, by_name):
    """One parameter's optimizer state from the by-name form (the first of its names found)."""
    st = {}
    for k, v in by_name.items():
        if k == "param_groups":
            continue
        if isinstance(v, dict):
            name = next((n for n in names if n in v), None)
            if name is not None:
                st[k] = v[name] if not isinstance(v[name], float) else torch.tensor(v[name])
        elif isinstance(v, (int, float)):
            st[k] = torch.tensor(float(v))
    return st


def load_optimizer_state_by_name(optimizer: Any, named_parameters: Iterable[Tuple[str, Any]],
                                 by_name: Mapping[str, Any], copy: bool = True) -> None:
    """The inverse of :func:`optimizer_state_by_name`: loads state keyed by name into ``optimizer``
    (whose parameters are those of ``named_parameters``, possibly other shards than were saved).

    ``copy=True`` goes through ``optimizer.load_state_dict``, which deep-copies every tensor.
    ``copy=False`` loads in place: the tensors of ``by_name`` become the optimizer's state (cast to
    their parameter's dtype and device as ``load_state_dict`` casts them, which copies nothing when
    they match) and the saved settings update the optimizer's parameter groups; no second copy of the
    state is made. Pass a state of its own (what :func:`tenplex.load` returned), never tensors another
    optimizer still steps. An optimizer whose class overrides ``load_state_dict``, or that has
    load_state_dict hooks, is loaded through ``load_state_dict`` either way."""
    names = _names(named_parameters)
    groups = by_name.get("param_groups")
    if groups is not None and len(groups) != len(optimizer.param_groups):
        raise ValueError("saved state has %d parameter groups, the optimizer %d"
                         % (len(groups), len(optimizer.param_groups)))
    if copy or not _plain_load(optimizer):
        _load_through_state_dict(optimizer, names, by_name, groups)
        return
    state = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in names:
                raise ValueError("an optimizer parameter has no name in named_parameters")
            st = _param_state(names[id(p)], by_name)
            if st:
                state[p] = {k: _cast(p, k, v, group) for k, v in st.items()}
    for gi, group in enumerate(optimizer.param_groups):  # nothing failed: change the optimizer now
        if groups is not None:
            group.update({k: (tuple(v) if isinstance(v, list) and k == "betas" else v)
                          for k, v in groups[gi].items() if k != "params"})
    optimizer.state.clear()
    optimizer.state.update(state)


def _plain_load(optimizer):
    """Whether ``optimizer`` loads as torch's base class does, with no hooks (so an in-place load is equal)."""
    own = type(optimizer).load_state_dict
    base = torch.optim.Optimizer.load_state_dict
    hooks = [getattr(optimizer, h, None) for h in ("_optimizer_load_state_dict_pre_hooks",
                                                     "_optimizer_load_state_dict_post_hooks")]
    return getattr(own, "__func__", own) is getattr(base, "__func__", base) and not any(h for h in hooks if h)


def _cast(param, key, value, group):
    """A state value as ``Optimizer.load_state_dict`` casts it: floating state to the parameter's dtype,
    everything to its device; ``step`` as it is (to float32 on the parameter's device for a capturable
    or fused optimizer, as torch 2 does)."""
    if not isinstance(value, torch.Tensor):
        return value
    if key == "step":
        if group.get("capturable") or group.get("fused"):
            return value.to(dtype=torch.float32, device=param.device)
        return value
    if param.is_floating_point():
        return value.to(dtype=param.dtype, device=param.device)
    return value.to(device=param.device)


def _load_through_state_dict(optimizer, names, by_name, groups):
    sd = optimizer.state_dict()
    state = {}
    for gi, (group, sd_group) in enumerate(zip(optimizer.param_groups, sd["param_groups"])):
        if groups is not None:
            sd_group.update({k: (tuple(v) if isinstance(v, list) and k == "betas" else v) for k, v in groups[gi].items()})
        for p, pos in zip(group["params"], sd_group["params"]):
            if id(p) not in names:
                raise ValueError("an optimizer parameter has no name in named_parameters")
            st = _param_state(names[id(p)], by_name)
            if st:
                state[pos] = st
    sd["state"] = state
    optimizer.load_state_dict(sd)
