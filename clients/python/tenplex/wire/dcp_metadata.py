"""A DCP checkpoint's :class:`Metadata` as JSON, both ways, without pickle.

``torch.distributed.checkpoint``'s own file system storage pickles its metadata, so reading a checkpoint
can run whatever code its ``.metadata`` file names. Ours is plain JSON of what the metadata holds
(tensor properties, global sizes, chunks, the planner's key paths, where each item is stored), and it is
rebuilt from names checked against what torch defines: a dtype must be one of torch's dtypes, a memory
format one of the three DCP encodes, the layout strided. Anything else is refused with
:class:`TenplexError` naming it, when saving (before anything is written) and when loading."""

import dataclasses
import json

from ..errors import TenplexError

FORMAT = "tenplex-dcp/1"
_MEMORY_FORMATS = ("contiguous_format", "channels_last", "preserve_format")
_MAX_DIMS = 64


def _torch():
    import torch
    from torch.distributed.checkpoint import metadata as md
    return torch, md


def _dims(values, what):
    """A list of sizes or offsets: each an int from 0 to 2^62, at most 64 of them."""
    if not isinstance(values, (list, tuple)) or len(values) > _MAX_DIMS or not all(
            type(v) is int and 0 <= v < (1 << 62) for v in values):
        raise TenplexError("DCP metadata: bad %s %r" % (what, values if isinstance(values, (list, tuple)) else [values]))
    return list(values)


def _key(key):
    """Where an item is stored, relative to its rank's tree: no absolute path, no empty, ``.`` or ``..`` part."""
    if not isinstance(key, str) or key.startswith("/") or "\\" in key or any(
            part in ("", ".", "..") for part in key.split("/")):
        raise TenplexError("DCP metadata: stored key %r is not a path inside a rank's tree" % (key,))
    return key


def _dtype_name(torch, dtype):
    name = str(dtype).replace("torch.", "")
    if getattr(torch, name, None) is not dtype:
        raise TenplexError("DCP metadata: dtype %s has no name of its own in torch" % dtype)
    return name


def _tensor_entry(torch, fqn, m):
    p = m.properties
    if p.layout != torch.strided:
        raise TenplexError("DCP metadata: %s has layout %s; only strided tensors are kept" % (fqn, p.layout))
    fmt = next((f for f in _MEMORY_FORMATS if getattr(torch, f) == p.memory_format), None)
    if fmt is None:
        raise TenplexError("DCP metadata: %s has memory format %s" % (fqn, p.memory_format))
    return {"kind": "tensor", "dtype": _dtype_name(torch, p.dtype), "requires_grad": bool(p.requires_grad),
            "memory_format": fmt, "pin_memory": bool(p.pin_memory), "size": _dims(list(m.size), "size"),
            "chunks": [{"offsets": _dims(list(c.offsets), "offsets"), "sizes": _dims(list(c.sizes), "sizes")}
                       for c in m.chunks]}


def _planner_data(data):
    """The default planner's data: per flattened key, the path of keys and indices into the nested state."""
    if data is None:
        return None
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, (tuple, list)) and all(type(x) in (str, int) for x in v)
            for k, v in data.items()):
        raise TenplexError("DCP metadata: planner data of type %s is not kept (the default planners' is: a key's "
                           "path of names and indices)" % type(data).__name__)
    return {k: [[type(x).__name__, x] for x in v] for k, v in data.items()}


def encode(metadata, storage_data):
    """``metadata`` as JSON bytes, with ``storage_data`` (per ``MetadataIndex``, a dict of ``rank`` and
    ``key``) for where each item is."""
    torch, md = _torch()
    known = {"state_dict_metadata", "planner_data", "storage_data", "storage_meta"}
    for f in dataclasses.fields(metadata):
        if f.name not in known and getattr(metadata, f.name) not in (None, f.default):
            raise TenplexError("DCP metadata: field %s is not kept by this version of tenplex" % f.name)
    entries = {}
    for fqn, m in metadata.state_dict_metadata.items():
        if isinstance(m, md.TensorStorageMetadata):
            entries[fqn] = _tensor_entry(torch, fqn, m)
        elif isinstance(m, md.BytesStorageMetadata):
            entries[fqn] = {"kind": "bytes"}
        else:
            raise TenplexError("DCP metadata: %s has storage metadata of type %s" % (fqn, type(m).__name__))
    where = [{"fqn": i.fqn, "offset": None if i.offset is None else _dims(list(i.offset), "offset"), "index": i.index,
              "rank": int(s["rank"]), "key": str(s["key"])} for i, s in storage_data.items()]
    sm = metadata.storage_meta
    meta = None if sm is None else {k: None if getattr(sm, k) is None else str(getattr(sm, k))
                                    for k in ("checkpoint_id", "save_id", "load_id")}
    return json.dumps({"format": FORMAT, "entries": entries, "planner": _planner_data(metadata.planner_data),
                       "storage": where, "storage_meta": meta}).encode("utf-8")


def _tensor_meta(torch, md, fqn, e):
    dtype = getattr(torch, str(e.get("dtype")), None)
    if not isinstance(dtype, torch.dtype):
        raise TenplexError("DCP metadata: %s names dtype %r, which torch does not have" % (fqn, e.get("dtype")))
    fmt = e.get("memory_format")
    if fmt not in _MEMORY_FORMATS:
        raise TenplexError("DCP metadata: %s names memory format %r" % (fqn, fmt))
    size = _dims(e["size"], "size")
    chunks = []
    for c in e["chunks"]:
        offsets, sizes = _dims(c["offsets"], "offsets"), _dims(c["sizes"], "sizes")
        if len(offsets) != len(size) or len(sizes) != len(size) or any(
                o + s > n for o, s, n in zip(offsets, sizes, size)):
            raise TenplexError("DCP metadata: a chunk of %s at %s of %s lies outside its size %s"
                               % (fqn, offsets, sizes, size))
        chunks.append(md.ChunkStorageMetadata(offsets=torch.Size(offsets), sizes=torch.Size(sizes)))
    props = md.TensorProperties(dtype=dtype, layout=torch.strided, requires_grad=bool(e["requires_grad"]),
                                memory_format=getattr(torch, fmt), pin_memory=bool(e["pin_memory"]))
    return md.TensorStorageMetadata(properties=props, size=torch.Size(size), chunks=chunks)


def _path(v):
    out = []
    for kind, x in v:
        if kind == "str" and isinstance(x, str) or kind == "int" and type(x) is int:
            out.append(x)
        else:
            raise TenplexError("DCP metadata: a key path holds %r" % ([kind, x],))
    return tuple(out)


def decode(body):
    """The :class:`Metadata` that :func:`encode` wrote (``storage_data``: per ``MetadataIndex``, a dict
    of ``rank`` and ``key``); :class:`TenplexError` for anything else."""
    torch, md = _torch()
    try:
        doc = json.loads(body)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise TenplexError("DCP metadata: not a %s document" % FORMAT)
        entries = {}
        for fqn, e in doc["entries"].items():
            kind = e.get("kind")
            if kind == "bytes":
                entries[fqn] = md.BytesStorageMetadata()
            elif kind == "tensor":
                entries[fqn] = _tensor_meta(torch, md, fqn, e)
            else:
                raise TenplexError("DCP metadata: %s has kind %r" % (fqn, kind))
        planner = None if doc["planner"] is None else {k: _path(v) for k, v in doc["planner"].items()}
        storage = {}
        for s in doc["storage"]:
            offset = None if s["offset"] is None else torch.Size(_dims(s["offset"], "offset"))
            index = s["index"]
            if index is not None and type(index) is not int:
                raise TenplexError("DCP metadata: index %r of %s" % (index, s["fqn"]))
            rank = s["rank"]
            if type(rank) is not int or rank < 0:
                raise TenplexError("DCP metadata: rank %r of %s" % (rank, s["fqn"]))
            storage[md.MetadataIndex(str(s["fqn"]), offset, index)] = {"rank": rank, "key": _key(s["key"])}
        sm = doc.get("storage_meta")
        meta = None if sm is None else md.StorageMeta(**{k: sm.get(k) for k in ("checkpoint_id", "save_id", "load_id")})
    except TenplexError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise TenplexError("DCP metadata: malformed (%s: %s)" % (type(e).__name__, e)) from None
    return md.Metadata(state_dict_metadata=entries, planner_data=planner, storage_data=storage, storage_meta=meta)
