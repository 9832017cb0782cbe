"""The tree codec: a state (nested dicts, lists and tuples of tensors and plain values) to and from
flat entries below a prefix, in the prototype's checkpoint layout (docs/CLIENTS.md), so checkpoints
written by the prototype's client and by this one are interchangeable:

* dict keys (``str`` or ``int``) become directories; a dict with ``int`` keys gets ``dir.meta`` =
  ``dict\\n<len>\\nint-keys`` followed by the name of each int key, one a line, so they load back
  as ints (without that line every key is a str, as the prototype wrote them); keys of other types
  and names that collide are refused (:class:`UnsavableState`) before anything is written; lists and tuples become directories with ``dir.meta``
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
from .errors import TenplexError, UnsavableState

TENSOR = ".numpy.ndarray"
DIR_META = "dir.meta"
INT_KEYS = "int-keys"
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
        names = _dict_names(obj, path)
        meta = _dict_meta(obj, names)
        if meta is not None:
            out.append((_child(path, DIR_META), "file", meta))
        for (k, v), n in zip(obj.items(), names):
            _entries(v, _child(path, n), out)
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


def _key_name(k, path):
    """The name of a dict key that round-trips with its type (``str`` or ``int``)."""
    if type(k) not in (str, int):
        raise UnsavableState("cannot save key %r (a %s) at %r: dict keys must be str or int to come back "
                           "as they were" % (k, type(k).__name__, path or "/"))
    try:
        return name(k)
    except ValueError as e:
        raise UnsavableState("cannot save key %r at %r: %s" % (k, path or "/", e)) from None


def _entry_name(n, v, path):
    """The name a child ``n`` (at ``path``) holding ``v`` takes in its directory."""
    if isinstance(v, (dict, list, tuple)):
        return n
    if is_tensor(v):
        return n + TENSOR
    return n + _encode_value(v, path, payload=False)[0]


def _dict_names(obj, path):
    """The names of a dict's keys; refuses keys that cannot round-trip and names that collide (``1``
    and ``"1"``; ``"a"`` holding a str and ``"a.str"`` holding a dict; a key's directory and the
    dict's ``dir.meta``)."""
    names = [_key_name(k, path) for k in obj]
    keys = {}
    entries = {DIR_META: "the dict's dir.meta"} if any(type(k) is int for k in obj) else {}
    for (k, v), n in zip(obj.items(), names):
        e = _entry_name(n, v, _child(path, n))
        clash = (n, keys[n]) if n in keys else (e, entries[e]) if e in entries else None
        if clash:
            raise UnsavableState("cannot save key %r at %r: its name %r collides with %s" % ((k, path or "/") + clash))
        keys[n] = entries[e] = "key %r" % (k,)
    return names


def _dict_meta(obj, names):
    """A dict's ``dir.meta``: ``dict\\n0`` when empty; ``dict\\n<n>\\nint-keys`` and then the name
    of each int key, one a line, when it has int keys; ``None`` otherwise (all keys str)."""
    if not obj:
        return b"dict\n0"
    ints = [n for k, n in zip(obj, names) if type(k) is int]
    if not ints:
        return None
    return ("dict\n%d\n%s\n%s" % (len(obj), INT_KEYS, "\n".join(ints))).encode()


def _encode_value(obj, path, payload=True):
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
        return ".argparse.Namespace", pickle.dumps(obj) if payload else None
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
            markers["/".join(parts[:-1])] = read_file(e["path"]).decode().split("\n")
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
    meta = markers.get(path) or [None]
    kind = meta[0]
    if kind == "dict" and len(meta) > 2 and meta[2] == INT_KEYS:
        return _with_int_keys(kids, meta[3:], path)
    if kind in ("list", "tuple"):
        items = [kids[str(i)] for i in range(len(kids))]
        if set(kids) != {str(i) for i in range(len(kids))}:
            raise TenplexError("list at %r has children %s, not 0..n-1" % (path, sorted(kids)))
        return tuple(items) if kind == "tuple" else items
    return kids


def _with_int_keys(kids, int_names, path):
    """A dict's children with the keys its ``dir.meta`` names as int keys turned back into ints."""
    ints = set(int_names)
    for n in ints:
        if n not in kids or n != str(_as_int(n, path)):
            raise TenplexError("dict at %r lists int key %r, which it does not hold as an int's name" % (path, n))
    return {(int(k) if k in ints else k): v for k, v in kids.items()}


def _as_int(n, path):
    try:
        return int(n)
    except ValueError:
        raise TenplexError("dict at %r lists %r as an int key" % (path, n)) from None
