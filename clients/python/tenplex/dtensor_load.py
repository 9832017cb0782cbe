""":func:`tenplex.load` into a state that holds DTensors: each DTensor of ``into`` is filled with the box
of the global tensor that its own layout (device mesh, placements, this process's mesh coordinate) gives
it, read from the job's newest complete generation, whatever mesh and placements saved it
(:mod:`tenplex.wire.dtensor_layout` records them with each saved shard). No description is written and
no collective runs: every rank computes from the saved layout which saved ranks hold the parts of its
box and reads only those byte ranges, from the daemon's shared memory where the saved rank's tree is
pinned on this host, else as range reads from whichever daemon holds it (peers from ``TENPLEX_DAEMONS``).

The rank's other leaves come from its own saved tree when the generation has the rank, else from rank
0's; a DTensor that the rank's tree lacks (a pipeline stage's) is found in the ranks that hold it. Everything is checked before the caller's tensors change: each saved layout against the shards it
describes (dtype, global shape, every piece's stored shape), and the caller's DTensors against their
own layouts."""

import base64
import logging

from .errors import TenplexError
from .generation_source import GenerationSource, torch_dtype
from .wire import dtensor_layout, restore, tree_codec, type_tags
from .wire.transfer import read_file

log = logging.getLogger("tenplex")


def load(c, job, rank, into, targets, dtensors, as_torch, allow_pickle, shared):
    """``(state, what was loaded)``; ``targets``: the other tensors of ``into``, ``dtensors`` its DTensors
    (relative path to tensor)."""
    src = GenerationSource(c, job)
    src.shared = shared is not False
    step = src.open()
    own = rank if rank < src.world else 0
    trees = _Trees(src)
    try:
        pinned = src.pin(own)
        memo = {}  # tensors of one layout (a model's layers) share their pieces
        plans = {rel: _plan(trees, rel, dt, own, rank, memo) for rel, dt in dtensors.items()}
        missing = [rel for rel, plan in plans.items() if plan is None]
        if missing:
            log.warning("tenplex: %d DTensors of into are in no rank of the checkpoint (kept as they are), e.g. %s",
                        len(missing), missing[0])
        plans = {rel: plan for rel, plan in plans.items() if plan is not None}
        over_rest = []
        if pinned is not None:
            state = restore.from_pin(c, pinned, targets, as_torch, allow_pickle, over_rest, skip=dtensors)
        else:
            state = restore.from_rest(src.holder(own), src.rank_dir(own), targets, as_torch, allow_pickle,
                                      over_rest, skip=dtensors)
        pieces = _fill(src, dtensors, plans)
        for rel in plans:
            if rel not in trees.entries(own):  # found in another rank's tree: in the state too
                _insert(state, into, rel[:-len(tree_codec.TENSOR)].split("/"), dtensors[rel])
    finally:
        src.unpin()
    ranks = sorted({p[0] for plan in plans.values() for p in plan})
    return state, {"job": job, "rank": rank, "step": step, "source": "generation", "path": src.rank_dir(own),
                   "via": "shared_memory" if pinned is not None else "rest", "rest_tensors": len(over_rest),
                   "copied_bytes": 0, "dtensors": len(plans), "pieces": pieces, "from_ranks": ranks}


class _Trees:
    """The saved ranks' entries (by path relative to the rank's tree) and leaf tags, read once each."""

    def __init__(self, src):
        self.src, self._entries, self._dirs = src, {}, {}

    def entries(self, rank):
        if rank not in self._entries:
            pinned = self.src.pin(rank)
            root = self.src.rank_dir(rank) + "/"
            self._entries[rank] = {e["path"]: e for e in pinned["entries"]} if pinned is not None else \
                {p[len(root):]: e for p, e in self.src.listed(rank).items()}
        return self._entries[rank]

    def tag(self, rank, rel):
        """The tag recorded for the leaf ``rel`` of a saved rank's tree (None: a plain tensor)."""
        parent, _, leaf = rel.rpartition("/")
        if (rank, parent) not in self._dirs:
            meta = (parent + "/" if parent else "") + tree_codec.DIR_META
            e, lines = self.entries(rank).get(meta), []
            if e is not None:
                raw = base64.b64decode(e["data"]) if e.get("data") is not None else \
                    read_file(self.src.holder(rank), "%s/%s" % (self.src.rank_dir(rank), meta))
                lines = tree_codec.dir_meta_lines(raw, parent)
            self._dirs[(rank, parent)] = type_tags.parse_meta(lines, parent)[2]
        return self._dirs[(rank, parent)].get(leaf[:-len(tree_codec.TENSOR)] if leaf.endswith(tree_codec.TENSOR) else leaf)

    def holder_of(self, rel, first):
        """The saved rank whose tree holds ``rel``: ``first``, else the lowest that does (a pipeline stage's
        tensors are in their stage's ranks only), else None."""
        if rel in self.entries(first):
            return first
        return next((r for r in range(self.src.world) if r != first and rel in self.entries(r)), None)


def _where(rel):
    return type_tags.where(rel[:-len(tree_codec.TENSOR)] if rel.endswith(tree_codec.TENSOR) else rel)


def _saved_layout(trees, t, rel, where):
    """The layout saved rank ``t`` recorded for ``rel``, checked: its coordinate is the one its ranks give ``t``."""
    tag, entry = trees.tag(t, rel), trees.entries(t)[rel]
    if entry.get("type") != "tensor":
        raise TenplexError("%r is not a tensor in the checkpoint; into holds a DTensor there" % where)
    if not (isinstance(tag, dict) and tag.get("t") == "DTensor"):
        return {"shape": list(entry["shape"]), "mesh": [], "placements": [], "coord": [], "ranks": [t]}, entry
    saved = dtensor_layout.checked(tag, trees.src.world, where)
    at = saved["ranks"][dtensor_layout.index(saved["coord"], saved["mesh"])]
    if at != t:
        raise TenplexError("%r: rank %d of the checkpoint records itself at mesh coordinate %s, which its ranks give "
                           "to rank %d" % (where, t, saved["coord"], at))
    return saved, entry


def _plan(trees, rel, dt, own, rank, memo):
    """The pieces that fill ``dt``'s local box: ``(saved rank, key, source offsets, target offsets,
    lengths, shared-memory view or None)``, each checked against the tensor and layout stored there; None
    when no saved rank holds ``rel``."""
    where = _where(rel)
    t = trees.holder_of(rel, own)
    if t is None:
        return None
    saved, entry = _saved_layout(trees, t, rel, where)
    shape, mesh, names, coord, _ = dtensor_layout.layout(dt, where)
    dtensor_layout.refuse_unwritable(dt, where)
    if shape != saved["shape"] or torch_dtype(entry["dtype"]) != dt.dtype:
        raise TenplexError("%r is %s%s in the checkpoint, %s%s in into" % (where, entry["dtype"], saved["shape"],
                                                                           dt.dtype, shape))
    own_box = dtensor_layout.box(saved["shape"], saved["mesh"], saved["placements"], saved["coord"])[1]
    if own_box != list(entry["shape"]):
        raise TenplexError("%r: its saved layout gives rank %d the box %s, but the rank stored %s"
                           % (where, t, own_box, entry["shape"]))
    toff, tsize = dtensor_layout.box(shape, mesh, names, coord)
    key = (tuple(saved["shape"]), tuple(saved["mesh"]), tuple(saved["placements"]), tuple(saved["ranks"]),
           tuple(toff), tuple(tsize))
    if key not in memo:
        memo[key] = _pieces(saved, toff, tsize, rank)
    return [_checked_piece(trees, rel, where, dt.dtype, saved, t, p) for p in memo[key]]


def _insert(state, into, names, value):
    """Puts ``value`` in ``state`` at the place its names have in ``into`` (through dicts; dicts made where
    missing). A place inside a list is left as it is (``into`` itself holds the filled DTensor)."""
    for i, name in enumerate(names):
        if not (isinstance(into, dict) and isinstance(state, dict)):
            return
        key = next((k for k in into if str(k) == name), None)
        if key is None:
            return
        if i == len(names) - 1:
            state[key] = value
            return
        state, into = state.setdefault(key, {}), into[key]


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


def _checked_piece(trees, rel, where, dtype, saved, t, piece):
    r, soff, doff, lengths, size = piece
    if r != t:  # the holder of another part recorded the same layout, at its own coordinate
        other, _ = _saved_layout(trees, r, rel, where)
        if any(other[k] != saved[k] for k in ("shape", "mesh", "placements", "ranks")):
            raise TenplexError("%r: ranks %d and %d of the checkpoint record different layouts (%s; %s)"
                               % (where, t, r, {k: saved[k] for k in ("shape", "mesh", "placements")},
                                  {k: other[k] for k in ("shape", "mesh", "placements")}))
    short, shape, view = trees.src.stored(r, rel)
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
