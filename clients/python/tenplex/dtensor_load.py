""":func:`tenplex.load` into a state that holds DTensors: each DTensor of ``into`` is filled with the box
of the global tensor that its own layout (device mesh, placements, this process's mesh coordinate) gives
it, read from the job's newest complete generation, whatever mesh and placements saved it
(:mod:`tenplex.wire.dtensor_layout` records them with each saved shard). No description is written and
no collective runs: every rank computes from the saved layout which saved ranks hold the parts of its
box and reads only those byte ranges, from the daemon's shared memory where the saved rank's tree is
pinned on this host, else as range reads from whichever daemon holds it (peers from ``TENPLEX_DAEMONS``).

The rank's other leaves come from its own saved tree when the generation has the rank, else from rank
0's. Everything is checked before the caller's tensors change: each saved layout against the shards it
describes (dtype, global shape, every piece's stored shape), and the caller's DTensors against their
own layouts."""

import base64
import logging

from .errors import TenplexError
from .generation_source import GenerationSource, torch_dtype
from .wire import dtensor_layout, restore, tree_codec, type_tags
from .wire.transfer import read_file

log = logging.getLogger("tenplex")


def load(c, job, rank, targets, dtensors, as_torch, allow_pickle, shared):
    """``(state, what was loaded)``; ``targets``: the other tensors of ``into``, ``dtensors`` its DTensors
    (relative path to tensor)."""
    src = GenerationSource(c, job)
    src.shared = shared is not False
    step = src.open()
    own = rank if rank < src.world else 0
    try:
        pinned = src.pin(own)
        entries = _entries(src, own, pinned)
        tags = _tags(src, own, entries, dtensors)
        memo = {}  # tensors of one layout (a model's layers) share their pieces
        plans = {rel: _plan(src, rel, dt, tags.get(rel), entries.get(rel), own, rank, memo)
                 for rel, dt in dtensors.items() if rel in entries}
        missing = [rel for rel in dtensors if rel not in entries]
        if missing:
            log.warning("tenplex: %d DTensors of into are not in the checkpoint (kept as they are), e.g. %s",
                        len(missing), missing[0])
        over_rest = []
        if pinned is not None:
            state = restore.from_pin(c, pinned, targets, as_torch, allow_pickle, over_rest, skip=dtensors)
        else:
            state = restore.from_rest(src.holder(own), src.rank_dir(own), targets, as_torch, allow_pickle,
                                      over_rest, skip=dtensors)
        pieces = _fill(src, dtensors, plans)
    finally:
        src.unpin()
    ranks = sorted({p[0] for plan in plans.values() for p in plan})
    return state, {"job": job, "rank": rank, "step": step, "source": "generation", "path": src.rank_dir(own),
                   "via": "shared_memory" if pinned is not None else "rest", "rest_tensors": len(over_rest),
                   "copied_bytes": 0, "dtensors": len(plans), "pieces": pieces, "from_ranks": ranks}


def _entries(src, rank, pinned):
    """The saved rank's entries by path relative to its tree."""
    if pinned is not None:
        return {e["path"]: e for e in pinned["entries"]}
    root = src.rank_dir(rank) + "/"
    return {p[len(root):]: e for p, e in src.listed(rank).items()}


def _tags(src, rank, entries, dtensors):
    """The saved tags of the leaves at ``dtensors``' places, from the ``dir.meta`` of their directories."""
    by_dir, out = {}, {}
    for rel in dtensors:
        parent, _, leaf = rel.rpartition("/")
        if parent not in by_dir:
            meta = (parent + "/" if parent else "") + tree_codec.DIR_META
            e, lines = entries.get(meta), []
            if e is not None:
                data = e.get("data")
                raw = base64.b64decode(data) if data is not None else read_file(src.holder(rank), "%s/%s" % (src.rank_dir(rank), meta))
                try:
                    lines = raw.decode("utf-8").split("\n")
                except UnicodeDecodeError as err:
                    raise TenplexError("the dir.meta of %r is not text: %s" % (type_tags.where(parent), err)) from None
            by_dir[parent] = type_tags.parse_meta(lines, parent)[2]
        out[rel] = by_dir[parent].get(leaf[:-len(tree_codec.TENSOR)] if leaf.endswith(tree_codec.TENSOR) else leaf)
    return out


def _plan(src, rel, dt, tag, entry, own, rank, memo):
    """The pieces that fill ``dt``'s local box: ``(saved rank, key, source offsets, target offsets,
    lengths, shared-memory view or None)``, each checked against the tensor stored there."""
    where = type_tags.where(rel[:-len(tree_codec.TENSOR)])
    if entry.get("type") != "tensor":
        raise TenplexError("%r is not a tensor in the checkpoint; into holds a DTensor there" % where)
    if isinstance(tag, dict) and tag.get("t") == "DTensor":
        saved = dtensor_layout.checked(tag, src.world, where)
    else:  # a whole tensor, saved by this rank's source
        saved = {"shape": list(entry["shape"]), "mesh": [], "placements": [], "coord": [], "ranks": [own]}
    shape, mesh, names, coord, _ = dtensor_layout.layout(dt, where)
    if shape != saved["shape"] or torch_dtype(entry["dtype"]) != dt.dtype:
        raise TenplexError("%r is %s%s in the checkpoint, %s%s in into" % (where, entry["dtype"], saved["shape"],
                                                                           dt.dtype, shape))
    own_box = dtensor_layout.box(saved["shape"], saved["mesh"], saved["placements"], saved["coord"])[1]
    if own_box != list(entry["shape"]):
        raise TenplexError("%r: its saved layout gives rank %d the box %s, but the rank stored %s"
                           % (where, own, own_box, entry["shape"]))
    toff, tsize = dtensor_layout.box(shape, mesh, names, coord)
    key = (tuple(saved["shape"]), tuple(saved["mesh"]), tuple(saved["placements"]), tuple(saved["ranks"]),
           tuple(toff), tuple(tsize))
    if key not in memo:
        memo[key] = _pieces(saved, toff, tsize, rank)
    return [_checked_piece(src, rel, where, dt.dtype, p) for p in memo[key]]


def _pieces(saved, toff, tsize, rank):
    """``(saved rank, source offsets, target offsets, lengths, stored box sizes)`` of each part of the
    target box ``toff``/``tsize`` that a saved coordinate holds (one of the replicas of a box)."""
    if 0 in tsize:
        return []
    boxes = {}
    for i, coord in enumerate(dtensor_layout.coordinates(saved["mesh"])):
        off, size = dtensor_layout.box(saved["shape"], saved["mesh"], saved["placements"], coord)
        lo = [max(a, b) for a, b in zip(off, toff)]
        hi = [min(a + n, b + m) for a, n, b, m in zip(off, size, toff, tsize)]
        if all(h > lo_ for lo_, h in zip(lo, hi)):
            boxes.setdefault((tuple(off), tuple(size)), []).append(saved["ranks"][i])
    out = []
    for (off, size), holders in boxes.items():
        r = rank if rank in holders else holders[rank % len(holders)]
        lo = [max(a, b) for a, b in zip(off, toff)]
        hi = [min(a + n, b + m) for a, n, b, m in zip(off, size, toff, tsize)]
        out.append((r, [a - b for a, b in zip(lo, off)], [a - b for a, b in zip(lo, toff)],
                    [h - a for a, h in zip(lo, hi)], list(size)))
    return out


def _checked_piece(src, rel, where, dtype, piece):
    r, soff, doff, lengths, size = piece
    short, shape, view = src.stored(r, rel)
    if shape != size or torch_dtype(short) != dtype:
        raise TenplexError("%r: its saved layout gives rank %d the box %s of %s, but the rank stored %s %s"
                           % (where, r, size, dtype, short, shape))
    if view is not None:
        for d, (o, n) in enumerate(zip(soff, lengths)):
            view = view.narrow(d, o, n)
    return r, rel, soff, doff, lengths, view


def _fill(src, dtensors, plans):
    """Copies every planned piece into its DTensor's local shard; the number of pieces."""
    import torch
    n, cuda = 0, False
    with torch.no_grad():
        for rel, plan in plans.items():
            target = dtensors[rel].to_local()
            cuda = cuda or target.is_cuda
            for r, key, soff, doff, lengths, view in plan:
                dst = target
                for d, (o, m) in enumerate(zip(doff, lengths)):
                    dst = dst.narrow(d, o, m)
                if view is not None:
                    dst.copy_(view)
                else:
                    src.read_range(r, key, soff, lengths, dst)
                n += 1
        if cuda:
            torch.cuda.synchronize()  # device copies end before the pins are released
    return n
