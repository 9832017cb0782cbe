"""The model spec of an ``nn.Module`` and its optimizer, built instead of written.

:func:`describe` reads every tensor of ``model.state_dict()`` (parameters, buffers, and a tied
weight under each of its names), takes each one's partition from the rules (:mod:`tenplex.rules`)
or, for a ``DTensor`` or ``ShardedTensor``, from the tensor itself, places it on the stage of its
``layers.<n>.`` (or the rule's stage, or first/last by where it comes in the module: before every
layer or after every layer), and adds the optimizer's per-parameter moments with their parameter's
partition. Pass the result as ``tenplex.save(..., spec=...)`` and it is stored with the job at the
first save, where every later reconfiguration finds it (docs/PTC.md, "Your own model").

Nothing is guessed: a tensor no rule matches, a partition its shape does not allow, a tied copy cut
differently from its original, a stage that cannot be told, or (with ``configs``) a size that a
configuration cannot split raises :class:`DescriptionError` naming the tensor and what does not fit.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Union

import re

import numpy as np

from .wire import tree_codec
from . import rules as rules_mod
from .rules import DescriptionError

_LAYER = re.compile(r"layers\.(\d+)\.")
# what each optimizer keeps per parameter (tensors shaped like it) and once (scalars), before a step
_MOMENTS = {"Adam": (("exp_avg", "exp_avg_sq"), ("step",)), "AdamW": (("exp_avg", "exp_avg_sq"), ("step",)),
            "SGD": (("momentum_buffer",), ()), "Adagrad": (("sum",), ("step",)),
            "RMSprop": (("square_avg",), ("step",))}


def describe(model: Any, rules: Any = None, optimizer: Any = None, params: Optional[Mapping[str, Any]] = None,
             configs: Optional[Iterable[Any]] = None) -> Dict[str, Any]:
    """The model spec (a dict in the form of docs/PTC.md) of ``model`` and ``optimizer``.

    ``rules``: a rules source or a list of them (see :mod:`tenplex.rules`); ``params`` fills their
    ``${name}`` numbers. ``optimizer``: an optimizer over ``model``'s parameters (its moments follow
    their parameter; before its first step the moments are those its class keeps), an optimizer
    class (every parameter that requires a gradient), or ``None`` (the model alone). ``configs``:
    ``(T, P, D)`` tuples the job will run under, checked now rather than at a reconfiguration."""
    compiled = rules_mod.compile(rules, params) if rules is not None else []
    entries = list(model.state_dict(keep_vars=True).items())
    first_name, ties = {}, {}
    for name, t in entries:
        key = id(t)
        if key in first_name:
            ties[name] = first_name[key]
        else:
            first_name[key] = name
    pipelined = configs is None or any(_pp(c) > 1 for c in configs)
    numbers = _stacks([n for n, _ in entries], pipelined)
    tensors, by_name = [], {}
    for i, (name, t) in enumerate(entries):
        spec = _tensor(name, t, compiled, numbers[i] if pipelined or _LAYER.search(name) else "first")
        tensors.append(spec)
        by_name[name] = spec
    for copy, orig in ties.items():
        _check_tie(by_name[copy], by_name[orig])
    layers = _layers(tensors)
    values = []
    if optimizer is not None:
        moments, scalars = _moments(model, optimizer, entries)
        for key, (names, kinds) in moments.items():
            for name in names:
                for k in kinds:
                    m = dict(by_name[name], name="optimizer.%s.%s" % (k, name))
                    tensors.append(m)
                    if name in ties and ties[name] in names:
                        ties[m["name"]] = "optimizer.%s.%s" % (k, ties[name])
        values = [{"key": "optimizer." + s, "scope": "global"} for s in scalars]
        values.append({"key": "optimizer.param_groups", "scope": "global"})
    spec = {"layers": layers, "tensors": tensors, "values": values, "ties": ties}
    for c in configs or ():
        check(spec, c)
    return spec


def _pp(config):
    """P of a configuration given as ``(T, P, D)`` or as a dict with ``pp``."""
    return int(config.get("pp", 1)) if isinstance(config, dict) else int(config[1])


def _stacks(names, pipelined):
    """Per entry (in module order), its global layer number (an int), ``"first"`` or ``"last"`` when it
    is outside every layer, or ``None`` when its stage cannot be told.

    Several stacks of ``layers.<n>.`` (an encoder's and a decoder's) are numbered in module order: the
    first stack's layers 0..E-1, the next one's E..E+D-1, and so on. A tensor outside the layers that
    comes after one stack and before the next (``encoder.norm``) is on the stage of the layer before
    it; one before every layer is on the first stage, one after every layer on the last. Stacks that
    take turns in the module are refused (with P > 1 possible), naming both."""
    stacks, sizes, of = [], {}, {}
    for i, n in enumerate(names):
        m = _LAYER.search(n)
        if m:
            prefix = n[:m.start()]
            if prefix not in sizes:
                stacks.append(prefix)
                sizes[prefix] = 0
            elif stacks[-1] != prefix and pipelined:
                raise DescriptionError("%s comes after %slayers.<n> but %slayers.<n> came before it: stacks of layers "
                                       "that take turns in the module cannot be numbered in module order; describe "
                                       "with configs=[(T, P, D), ...] that all have P = 1 (the stages are then never "
                                       "cut)" % (n, stacks[-1], prefix))
            sizes[prefix] = max(sizes[prefix], int(m.group(1)) + 1)
            of[i] = (prefix, int(m.group(1)))
    offsets, total = {}, 0
    for prefix in stacks:
        offsets[prefix] = total
        total += sizes[prefix]
    out, layered = [], sorted(of)
    for i in range(len(names)):
        if i in of:
            out.append(offsets[of[i][0]] + of[i][1])
        elif not layered or i < layered[0]:
            out.append("first")
        elif i > layered[-1]:
            out.append("last")
        else:
            before = of[max(j for j in layered if j < i)][0]
            after = of[min(j for j in layered if j > i)][0]
            out.append(offsets[before] + sizes[before] - 1 if before != after else None)
    return out


def _tensor(name, t, compiled, position):
    shape, own = _sharded(name, t)
    rule, part = rules_mod.first_match(compiled, name)
    if own is not None and part is not None and part != own:
        raise DescriptionError("%s: %r says %s but the tensor itself is %s" % (name, rule, part, own))
    part = own if own is not None else part
    if part is None:
        pats = [r.pattern for r in compiled]
        shown = ", ".join(pats[:4]) + (", ... (%d rules)" % len(pats) if len(pats) > 4 else "")
        raise DescriptionError("%s %s matches no rule (%s); add one, e.g. {\"match\": \"%s\", \"partition\": "
                               "\"replicated\"}" % (name, list(shape), shown or "no rules given", name))
    _check_partition(name, shape, part)
    spec = {"name": name, "dtype": _dtype(t), "shape": list(shape), "partition": part}
    if _LAYER.search(name):
        spec["layer"] = position  # numbered in module order over every stack
    elif rule is not None and rule.stage:
        spec["stage"] = rule.stage
    elif isinstance(position, int):
        spec["layer"] = position  # between two stacks: on the stage of the layer before it
    elif position is not None:
        spec["stage"] = position
    else:
        raise DescriptionError("%s is in no layers.<n>. and comes between layers in the module, so its pipeline "
                               "stage cannot be told; give \"stage\" in its rule (or describe with configs that all "
                               "have P = 1)" % name)
    return spec


def _check_partition(name, shape, p):
    inner = p.get("inner", p) if p["kind"] == "expert" else p
    if inner["kind"] in ("split", "vocab"):
        dim = inner.get("dim", 0)
        if dim >= len(shape):
            raise DescriptionError("%s: %s splits dim %d but the tensor has shape %s"
                                   % (name, _kind(inner), dim, list(shape)))
        g = inner.get("granule", 1)
        if not isinstance(g, int) or g < 1 or shape[dim] % g:
            raise DescriptionError("%s: dim %d of size %d is not made of whole granules of %s"
                                   % (name, dim, shape[dim], g))


def _kind(p):
    if p["kind"] == "split":
        return {0: "a column split", 1: "a row split"}.get(p["dim"], "a split")
    return "a vocabulary split"


def _check_tie(copy, orig):
    if copy["shape"] != orig["shape"] or copy["partition"] != orig["partition"]:
        raise DescriptionError("%s is the same tensor as %s but is described as %s %s, the original as %s %s"
                               % (copy["name"], orig["name"], copy["partition"], copy["shape"],
                                  orig["partition"], orig["shape"]))


def _layers(tensors):
    found = sorted({t["layer"] for t in tensors if "layer" in t})
    if found and found != list(range(len(found))):
        missing = sorted(set(range(found[-1] + 1)) - set(found))
        raise DescriptionError("layers %s hold no tensor (layers seen: %s); layer indices must run 0..L-1"
                               % (missing, found))
    return len(found)


def _dtype(t):
    import torch
    if t.dtype == torch.bfloat16:
        return "bf16"
    return tree_codec.short_dtype(np.dtype(torch.empty((), dtype=t.dtype).numpy().dtype))


def _moments(model, optimizer, entries):
    """``({group: (param names, moment kinds)}, scalar kinds)`` of the optimizer."""
    import torch
    names = {}
    for name, t in entries:
        names.setdefault(id(t), []).append(name)
    if isinstance(optimizer, type):
        kinds, scalars = _by_class(optimizer.__name__)
        ps = [n for _, p in model.named_parameters() if p.requires_grad for n in names[id(p)]]
        return {"all": (ps, kinds)}, scalars
    ps, kinds, scalars = [], None, set()
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in names:
                raise DescriptionError("an optimizer parameter of shape %s is not a tensor of the model"
                                       % list(p.shape))
            ps.extend(names[id(p)])
            st = optimizer.state.get(p)
            if st:
                ks = tuple(k for k, v in st.items() if isinstance(v, torch.Tensor) and v.dim() > 0)
                scalars.update(k for k, v in st.items() if not (isinstance(v, torch.Tensor) and v.dim() > 0))
                if kinds is not None and ks != kinds:
                    raise DescriptionError("%s: its optimizer state has %s, other parameters' %s"
                                           % (names[id(p)][0], ks, kinds))
                kinds = ks
    if kinds is None:
        kinds, scalars = _by_class(type(optimizer).__name__, optimizer)
    return {"all": (ps, kinds)}, sorted(scalars)


def _by_class(cls, optimizer=None):
    if cls not in _MOMENTS:
        raise DescriptionError("optimizer %s: its per-parameter state is not known before its first step; describe "
                               "after one step, or use one of %s" % (cls, sorted(_MOMENTS)))
    kinds, scalars = _MOMENTS[cls]
    groups = optimizer.param_groups if optimizer is not None else []
    if any(g.get("amsgrad") for g in groups):
        kinds = kinds + ("max_exp_avg_sq",)
    if cls == "SGD" and groups and not any(g.get("momentum") for g in groups):
        kinds = ()
    return kinds, list(scalars)


# ---------------------------------------------------------------- sharded tensors (DTensor, ShardedTensor)

def _sharded(name, t):
    """``(global shape, partition or None)``: a DTensor's or ShardedTensor's own layout, else the
    tensor's shape and ``None``."""
    if hasattr(t, "placements") and hasattr(t, "device_mesh"):
        return _dtensor(name, t)
    if hasattr(t, "metadata") and hasattr(t, "local_shards"):
        return _sharded_tensor(name, t)
    return tuple(t.shape), None


def _dtensor(name, t):
    shape = tuple(t.shape)  # a DTensor's shape is the global one
    split = [(i, p.dim) for i, p in enumerate(t.placements) if hasattr(p, "dim") and type(p).__name__ == "Shard"]
    other = [p for p in t.placements if type(p).__name__ not in ("Shard", "Replicate")]
    if other or len(split) > 1:
        raise DescriptionError("%s: DTensor placements %s are not one Shard(dim) over the tensor-parallel mesh "
                               "dimension or Replicate()" % (name, list(t.placements)))
    if not split:
        return shape, {"kind": "replicated"}
    dim = split[0][1] if split[0][1] >= 0 else split[0][1] + len(shape)
    n = t.device_mesh.size(split[0][0]) if hasattr(t.device_mesh, "size") else None
    if n and shape[dim] % n:
        raise DescriptionError("%s: DTensor Shard(%d) of size %d over %d ranks is not an equal split"
                               % (name, dim, shape[dim], n))
    return shape, {"kind": "split", "dim": dim}


def _sharded_tensor(name, t):
    md = t.metadata()
    shape = tuple(md.size)
    shards = sorted(md.shards_metadata, key=lambda s: tuple(s.shard_offsets))
    if len(shards) == 1 and list(shards[0].shard_sizes) == list(shape):
        return shape, {"kind": "replicated"}
    dims = {d for s in shards for d in range(len(shape)) if s.shard_sizes[d] != shape[d]}
    if len(dims) != 1:
        raise DescriptionError("%s: ShardedTensor of %s is cut along dims %s; only a split along one dim is "
                               "understood" % (name, list(shape), sorted(dims)))
    dim = dims.pop()
    size = shape[dim] // len(shards)
    for i, s in enumerate(shards):
        if s.shard_offsets[dim] != i * size or s.shard_sizes[dim] != size:
            raise DescriptionError("%s: ShardedTensor shard %d is [%d, %d) of dim %d; expected %d equal consecutive "
                                   "parts of %d" % (name, i, s.shard_offsets[dim], s.shard_offsets[dim]
                                                    + s.shard_sizes[dim], dim, len(shards), size))
    return shape, {"kind": "split", "dim": dim}


# ---------------------------------------------------------------- checks against configurations

def check(spec: Mapping[str, Any], config: Union[Sequence[int], Mapping[str, int]]) -> None:
    """Raises :class:`DescriptionError` when the spec cannot be cut under ``config`` = ``(T, P, D)``
    (or a dict with tp, pp, dp): a split size that T does not divide, layers that P does not."""
    if isinstance(config, dict):
        config = (config["tp"], config["pp"], config["dp"])
    tp, pp, dp = config
    if spec["layers"] % pp:
        raise DescriptionError("%d layers cannot be split uniformly over P=%d pipeline stages under (T,P,D)=%s"
                               % (spec["layers"], pp, tuple(config)))
    for t in spec["tensors"]:
        p = t["partition"]
        p = p.get("inner", p) if p["kind"] == "expert" else p
        if p["kind"] != "split":
            continue
        size, g = t["shape"][p["dim"]], p.get("granule", 1)
        if (size // g) % tp:
            raise DescriptionError("%s: dim %d of size %d%s cannot be split into T=%d equal parts under (T,P,D)=%s"
                                   % (t["name"], p["dim"], size, " (%d units of %d)" % (size // g, g) if g > 1 else "",
                                      tp, tuple(config)))


def shard(full: Any, partition: Optional[Mapping[str, Any]], tp: int, T: int) -> Any:
    """Tensor rank ``tp``'s part of the whole tensor ``full`` under ``partition`` (a spec partition
    dict), as tenplex stores it: vocabulary splits padded with zero rows to divisibleBy x T."""
    import torch
    kind = partition["kind"]
    if kind == "replicated":
        return full.clone()
    dim = partition.get("dim", 0)
    if kind == "vocab":
        m = partition.get("divisibleBy", 128) * T
        padded = (full.shape[dim] + m - 1) // m * m
        pad = list(full.shape)
        pad[dim] = padded - full.shape[dim]
        full = torch.cat([full, torch.zeros(pad, dtype=full.dtype)], dim)
    if kind not in ("split", "vocab"):
        raise DescriptionError("shard: partition %s is not split, vocab or replicated" % partition)
    n = full.shape[dim] // T
    return full.narrow(dim, tp * n, n).clone()
