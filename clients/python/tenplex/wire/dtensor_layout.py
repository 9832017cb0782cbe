"""A DTensor's layout as the tree keeps it: the tag of a saved ``DTensor`` (its global shape, device
mesh, placements and the saving rank's mesh coordinate) beside its local shard, and the boxes of the
global tensor that each mesh coordinate holds, as DTensor cuts them (``Shard(d)`` splits the extent it
has along ``d`` into ``torch.chunk`` pieces, mesh dimension after mesh dimension; ``Replicate()`` keeps
it whole). Nothing here does I/O; :mod:`tenplex.dtensor_load` reads the boxes a new layout needs.

Only what can be kept exactly is recorded: ``Partial`` placements (a sum not yet taken) and placements
of other kinds are refused, naming the key, before anything is written."""

import math

from ..errors import TenplexError, UnsavableState as Unsupported

MAX_MESH = 1 << 20  # coordinates of a recorded mesh
_MAX_DIM = 1 << 62


def is_dtensor(obj):
    return type(obj).__name__ == "DTensor" or hasattr(obj, "device_mesh") and hasattr(obj, "placements") \
        and hasattr(obj, "to_local")


def local(obj):
    """A DTensor's local shard (detached, the tensor that holds its bytes); other values as they are."""
    if not is_dtensor(obj):
        return obj
    import torch
    with torch.no_grad():
        return obj.to_local().detach()


def placement_names(placements, ndim, where):
    """``Shard(d)`` -> ``"S<d>"`` (``d`` made non-negative), ``Replicate()`` -> ``"R"``."""
    out = []
    for p in placements:
        kind = type(p).__name__
        if kind == "Shard":
            d = p.dim + ndim if p.dim < 0 else p.dim
            out.append("S%d" % d)
        elif kind == "Replicate":
            out.append("R")
        else:
            raise Unsupported("the DTensor at %r has the placement %s (%s), which tenplex does not record (only "
                              "Shard(d) and Replicate())%s"
                              % (where, kind, p, "; call .redistribute(mesh, [Replicate()]) or .full_tensor() to take "
                                 "the pending sum first" if kind == "Partial" else ""))
    return out


def mesh_ranks(mesh):
    """The global ranks of a device mesh in row-major order of its coordinates."""
    return [int(r) for r in mesh.mesh.flatten().tolist()]


def layout(obj, where):
    """``(global shape, mesh shape, placement names, coordinate, ranks)`` of a DTensor."""
    shape = [int(n) for n in obj.shape]
    mesh = obj.device_mesh
    names = placement_names(obj.placements, len(shape), where)
    coord = mesh.get_coordinate()
    if coord is None:
        raise Unsupported("the DTensor at %r: this process is not in its device mesh" % where)
    return shape, [int(n) for n in mesh.mesh.shape], names, [int(c) for c in coord], mesh_ranks(mesh)


def tag(obj, where, rank=None):
    """The tag that records a DTensor's layout; refuses one whose local shard is not the box its layout
    gives this coordinate (a DTensor built with uneven local shapes)."""
    shape, mesh, names, coord, ranks = layout(obj, where)
    offsets, sizes = box(shape, mesh, names, coord)
    got = [int(n) for n in obj.to_local().shape]
    if got != sizes:
        raise Unsupported("the DTensor at %r cannot be kept exactly: its local shard is %s, but its layout (%s over mesh %s) "
                          "gives coordinate %s the box %s" % (where, got, names, mesh, coord, sizes))
    t = {"t": "DTensor", "shape": shape, "mesh": mesh, "placements": names, "coord": coord,
         "device": str(obj.device_mesh.device_type)}
    if ranks != list(range(len(ranks))):
        t["ranks"] = ranks
    if obj.requires_grad:
        t["grad"] = True
    return t


def box(shape, mesh, names, coord):
    """``(offsets, sizes)`` of the global tensor that mesh coordinate ``coord`` holds."""
    offsets, sizes = [0] * len(shape), list(shape)
    for i, name in enumerate(names):
        if name == "R":
            continue
        d = int(name[1:])
        chunk = -(-sizes[d] // mesh[i]) if sizes[d] else 0
        start = min(chunk * coord[i], sizes[d])
        offsets[d] += start
        sizes[d] = min(sizes[d], start + chunk) - start
    return offsets, sizes


def for_save(entries, rank, world):
    """:func:`tree_codec.flatten`'s ``entries`` with each DTensor replaced by its local shard. Refuses a
    DTensor that is not this ``rank``'s at its mesh coordinate (the saved rank must be its global rank),
    or whose mesh has ranks beyond the step's ``world``."""
    out, ranks_of = [], {}
    for rel, kind, p in entries:
        if kind == "tensor" and is_dtensor(p):
            mesh = p.device_mesh
            ranks = ranks_of.setdefault(id(mesh), mesh_ranks(mesh))
            at = index(p.device_mesh.get_coordinate(), list(mesh.mesh.shape))
            if ranks[at] != rank or max(ranks) >= world:
                raise Unsupported("cannot save the DTensor at %r as rank %d of %d: its device mesh places this process "
                                  "at rank %d and spans ranks up to %d; save with rank= the process's global rank and "
                                  "world= the world size" % (rel[:-len(".numpy.ndarray")], rank, world, ranks[at],
                                                             max(ranks)))
            p = local(p)
        out.append((rel, kind, p))
    return out


def index(coord, mesh):
    """The row-major place of a coordinate in its mesh."""
    i = 0
    for c, n in zip(coord, mesh):
        i = i * int(n) + int(c)
    return i


def is_part(t):
    """Whether a saved tag is a DTensor's that other coordinates hold other parts of (a ``Shard`` over more
    than one coordinate)."""
    return isinstance(t, dict) and t.get("t") == "DTensor" and any(
        isinstance(n, str) and n.startswith("S") and m != 1 for n, m in zip(t.get("placements") or [], t.get("mesh") or []))


def refuse_unwritable(obj, where):
    """Refuses (before anything is copied) a DTensor whose local shard cannot take the loaded bytes."""
    t = obj.to_local()
    why = "is on the meta device: materialise the model first (e.g. model.to_empty(device=...))" \
        if t.device.type == "meta" else "is an inference-mode tensor" if t.is_inference() else \
        "is an expanded view (a stride of 0)" if any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape)) else None
    if why:
        raise TenplexError("cannot load the DTensor at %r: its local shard %s" % (where, why))


def coordinates(mesh):
    """Every coordinate of a mesh, in row-major order (its index is its place in ``ranks``)."""
    out = [[]]
    for n in mesh:
        out = [c + [i] for c in out for i in range(n)]
    return out


def _ints(value, what, low, high):
    if not isinstance(value, list) or not all(type(v) is int and low <= v < high for v in value):
        raise ValueError("%s is not a list of ints in [%d, %d)" % (what, low, high))
    return value


def checked(t, world, where):
    """A saved DTensor tag, checked before anything is sized by it: its shape, a mesh of at most
    :data:`MAX_MESH` coordinates, placements over the tensor's dims, a coordinate in the mesh, and
    ranks (one per coordinate) within the generation's ``world``. Raises :class:`TenplexError`."""
    try:
        if not isinstance(t, dict):
            raise ValueError("not a JSON object")
        shape = _ints(t.get("shape"), "shape", 0, _MAX_DIM)
        mesh = _ints(t.get("mesh"), "mesh", 1, MAX_MESH + 1)
        if math.prod(mesh) > MAX_MESH:
            raise ValueError("a mesh of %s has more than %d coordinates" % (mesh, MAX_MESH))
        names = t.get("placements")
        if not isinstance(names, list) or len(names) != len(mesh) or not all(
                isinstance(n, str) and (n == "R" or n in ["S%d" % d for d in range(len(shape))])
                for n in names):
            raise ValueError("placements %.100r are not one of R, S<dim> per mesh dimension" % (names,))
        coord = t.get("coord")
        if not isinstance(coord, list) or len(coord) != len(mesh) or not all(
                type(c) is int and 0 <= c < n for c, n in zip(coord, mesh)):
            raise ValueError("coordinate %.100r is not in the mesh %s" % (coord, mesh))
        ranks = t.get("ranks", list(range(math.prod(mesh))))
        _ints(ranks, "ranks", 0, max(world, 1))
        if len(ranks) != math.prod(mesh):
            raise ValueError("%d ranks for a mesh of %d coordinates" % (len(ranks), math.prod(mesh)))
        if len(set(ranks)) != len(ranks):
            raise ValueError("ranks %.100r name a rank twice" % (ranks,))
    except ValueError as e:
        raise TenplexError("%r was saved as a DTensor whose layout is malformed or outside the generation of %d "
                           "ranks: %s" % (where, world, e)) from None
    return {"shape": shape, "mesh": mesh, "placements": names, "coord": coord, "ranks": ranks}
