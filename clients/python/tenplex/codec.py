"""The tree codec: a state (nested dicts, lists and tuples of tensors and plain values) to and from
flat entries below a prefix, in the prototype's checkpoint layout (docs/CLIENTS.md), so checkpoints
written by the prototype's client and by this one are interchangeable:

* dict keys become directories; lists and tuples become directories with ``dir.meta``
  (``list\\n<len>`` or ``tuple\\n<len>``) and children ``0``, ``1``, ...; an empty dict is a
  directory holding ``dir.meta`` = ``dict\\n0``;
* tensors and arrays become ``<key>.numpy.ndarray`` (every dtype of the daemon, ``bool`` and
  ``bf16`` included, scalars as 0-d tensors), sent as the daemon's raw tensor body (its bytes in
  C order, with the dtype's short name and the dims);
* ``None`` -> ``<key>.none``; ``str``/``int``/``float``/``bool`` -> ``<key>.str|.int|.float|.bool``
  holding ``str(value)`` (``repr`` for floats, so they come back exactly); ``bytes`` ->
  ``<key>.bytes``; ``argparse.Namespace`` -> ``<key>.argparse.Namespace`` (a pickle).

Nothing here does I/O: :func:`flatten` gives the entries to write, :func:`unflatten` rebuilds a
tree from a listing with the reads given as functions."""

import argparse
import pickle

import numpy as np

from . import torch_helpers
from .errors import TenplexError

TENSOR = ".numpy.ndarray"
DIR_META = "dir.meta"
VALUE_SUFFIXES = (".argparse.Namespace", ".none", ".str", ".int", ".float", ".bool", ".bytes")
NUMPY_DTYPES = {
    "bool": np.bool_, "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
    "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.uint16,
}
_SHORT = {np.dtype(v): k for k, v in NUMPY_DTYPES.items() if k != "bf16"}


def name(key):
    """A dict key as a name in the store (``ValueError`` when it cannot be one)."""
    k = str(key)
    if k in ("", ".", "..") or "/" in k or "\0" in k:
        raise ValueError("key %r cannot be a name in the store (empty, '.', '..', or contains '/')" % (key,))
    return k


# ---------------------------------------------------------------- tensors

def short_dtype(dtype):
    """The daemon's name of a numpy dtype (``TypeError`` for one it cannot store)."""
    s = _SHORT.get(np.dtype(dtype))
    if s is None:
        raise TypeError("dtype %s cannot be stored (supported: %s)" % (dtype, ", ".join(NUMPY_DTYPES)))
    return s


def numpy_dtype(short):
    """The numpy dtype that holds the daemon's dtype ``short`` (bf16: its bit patterns)."""
    try:
        return np.dtype(NUMPY_DTYPES[short])
    except KeyError:
        raise TenplexError("the daemon sent an unknown dtype %r" % short) from None


def is_tensor(x):
    return isinstance(x, (np.ndarray, np.generic)) or torch_helpers.is_tensor(x)


def as_array(x):
    """A tensor or array as (contiguous numpy array of its bytes, dtype short name, shape)."""
    if torch_helpers.is_tensor(x):
        a, bf16 = torch_helpers.to_numpy(x)
        return a, "bf16" if bf16 else short_dtype(a.dtype), tuple(x.shape)
    a = np.asarray(x)  # keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    return a, short_dtype(a.dtype), a.shape


def byte_view(a):
    """The bytes of a contiguous array, without a copy."""
    return memoryview(a.reshape(-1)).cast("B") if a.size else memoryview(b"")


def dims(shape):
    """A shape in the daemon's form: ``3,4``; empty for a scalar."""
    return ",".join(str(d) for d in shape)


# ---------------------------------------------------------------- state -> entries

def flatten(state):
    """A state as ``(relative path, kind, payload)`` entries in a deterministic order: kind
    ``"tensor"`` (payload: the tensor or array) or ``"file"`` (payload: bytes)."""
    if not state and isinstance(state, dict):
        return [(DIR_META, "file", b"dict\n0")]
    out = []
    _entries(state, "", out)
    return out


def _child(path, key):
    return (path + "/" if path else "") + key


def _entries(obj, path, out):
    if isinstance(obj, dict):
        if not obj:
            out.append((path + "/" + DIR_META, "file", b"dict\n0"))
        for k, v in obj.items():
            _entries(v, _child(path, name(k)), out)
    elif isinstance(obj, (list, tuple)):
        kind = "tuple" if isinstance(obj, tuple) else "list"
        out.append((_child(path, DIR_META), "file", ("%s\n%d" % (kind, len(obj))).encode()))
        for i, v in enumerate(obj):
            _entries(v, _child(path, str(i)), out)
    elif is_tensor(obj):
        out.append((path + TENSOR, "tensor", obj))
    else:
        suffix, payload = _encode_value(obj, path)
        out.append((path + suffix, "file", payload))


def _encode_value(obj, path):
    """(suffix, bytes) of a plain value."""
    if obj is None:
        return ".none", b"None"
    if isinstance(obj, bool):
        return ".bool", str(obj).encode()
    if isinstance(obj, int):
        return ".int", str(obj).encode()
    if isinstance(obj, float):
        return ".float", repr(obj).encode()
    if isinstance(obj, str):
        return ".str", obj.encode("utf-8")
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return ".bytes", bytes(obj)
    if isinstance(obj, argparse.Namespace):
        return ".argparse.Namespace", pickle.dumps(obj)
    raise TypeError("cannot save a %s at %r (tensors, arrays, dict, list, tuple, str, int, float, bool, "
                    "bytes, None and argparse.Namespace can be saved)" % (type(obj).__name__, path))


# ---------------------------------------------------------------- entries -> state

def decode_value(suffix, data):
    """The value a file with ``suffix`` (one of :data:`VALUE_SUFFIXES`) holds."""
    if suffix == ".none":
        return None
    text = data.decode("utf-8") if suffix != ".bytes" and suffix != ".argparse.Namespace" else None
    if suffix == ".str":
        return text
    if suffix == ".int":
        return int(text)
    if suffix == ".float":
        return float(text)
    if suffix == ".bool":
        if text.strip() not in ("True", "False"):
            raise TenplexError("a .bool file holds %r, not True or False" % text)
        return text.strip() == "True"
    if suffix == ".bytes":
        return data
    return pickle.loads(data)


def unflatten(entries, prefix, read_file, read_tensor):
    """The state below ``prefix`` from a recursive listing's ``entries`` (dicts with ``path``,
    ``type`` and, for tensors, ``dtype`` and ``shape``), in the listing's order.

    ``read_file(path) -> bytes`` and ``read_tensor(entry) -> tensor`` read one entry. Files of
    another writer (no known suffix) come back as their bytes."""
    root = prefix.rstrip("/") + "/"
    tree = {}
    markers = {}
    for e in entries:
        parts = e["path"][len(root):].split("/")
        node = tree
        for d in parts[:-1]:
            node = node.setdefault(d, {})
        leaf = parts[-1]
        if leaf == DIR_META:
            markers["/".join(parts[:-1])] = read_file(e["path"]).decode().split("\n")[0]
        elif e["type"] == "tensor":
            node[leaf[:-len(TENSOR)] if leaf.endswith(TENSOR) else leaf] = read_tensor(e)
        else:
            key, value = _leaf_value(leaf, read_file(e["path"]))
            node[key] = value
    return _rebuild(tree, "", markers)


def _leaf_value(leaf, data):
    for s in VALUE_SUFFIXES:
        if leaf.endswith(s):
            return leaf[:-len(s)], decode_value(s, data)
    return leaf, data  # a file of another writer: its bytes


def _rebuild(node, path, markers):
    if not isinstance(node, dict):
        return node
    kids = {k: _rebuild(v, _child(path, k), markers) for k, v in node.items()}
    kind = markers.get(path)
    if kind in ("list", "tuple"):
        items = [kids[str(i)] for i in range(len(kids))]
        if set(kids) != {str(i) for i in range(len(kids))}:
            raise TenplexError("list at %r has children %s, not 0..n-1" % (path, sorted(kids)))
        return tuple(items) if kind == "tuple" else items
    return kids
