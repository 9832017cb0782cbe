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
  ``<key>.bytes``; an ``argparse.Namespace`` of plain data -> ``<key>.argparse.Namespace`` (a pickle that
  loads without running code, :mod:`tenplex.wire.namespace_pickle`), one holding other values a directory
  of its attributes typed ``Namespace``;
* every other type the client keeps (numpy arrays and scalars, ``OrderedDict``, sets, paths,
  dtypes, enums, dataclasses, ...) in one of these plain forms, with its type recorded in the
  ``dir.meta`` of its directory after a line ``types`` (:mod:`tenplex.wire.type_tags`).

Nothing here does I/O: :func:`flatten` gives the entries to write, :func:`unflatten` rebuilds a
tree from a listing with the reads given as functions."""

import argparse
import pickle

import numpy as np

from . import namespace_pickle, torch_values, type_restore, type_tags
from ..errors import TenplexError, UnsavableState

TENSOR = ".numpy.ndarray"
DIR_META = "dir.meta"
INT_KEYS = "int-keys"
VALUE_SUFFIXES = (".argparse.Namespace", ".none", ".str", ".int", ".float", ".bool", ".bytes")
NUMPY_DTYPES = {
    "bool": np.bool_, "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
    "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.uint16,
    "c64": np.complex64, "c128": np.complex128,
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
    return isinstance(x, (np.ndarray, np.generic)) or torch_values.is_tensor(x)


def as_array(x):
    """A tensor or array as (contiguous numpy array of its bytes, dtype short name, shape)."""
    if torch_values.is_tensor(x):
        a, bf16 = torch_values.to_numpy(x)
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

def flatten(state, allow_pickle=False):
    """A state as ``(relative path, kind, payload)`` entries in a deterministic order: kind
    ``"tensor"`` (payload: the tensor or array) or ``"file"`` (payload: bytes).

    Types other than the plain ones are recorded in ``dir.meta`` (:mod:`tenplex.wire.type_tags`); a value
    that cannot be kept exactly raises ``TypeError`` or ``ValueError`` naming its key, unless
    ``allow_pickle`` lets it be stored as a pickle."""
    if type(state) is dict and not state:
        return [(DIR_META, "file", b"dict\n0")]
    out = []
    node = _classify(state, "", allow_pickle)
    if node[0] != "container" and node[2] is not None:
        raise UnsavableState("a %s cannot be the whole state (its type could not be kept): save it in a dict"
                             % type(state).__name__)
    _emit(node, "", out, allow_pickle)
    return out


def _child(path, key):
    return (path + "/" if path else "") + key


# the types most leaves are, found without an isinstance walk
_PLAIN_TENSORS = frozenset((np.ndarray,) + ((torch_values.torch.Tensor,) if torch_values.available() else ()))


def _classify(obj, path, allow_pickle):
    """How ``obj`` is stored: ``("container", (kind, items, tag), None)``, ``("tensor", obj, tag)``
    or ``("leaf", (suffix, payload), tag)``."""
    try:
        if type(obj) in _PLAIN_TENSORS or is_tensor(obj):
            return "tensor", obj, type_tags.tensor_tag(obj, path)
        c = type_tags.container(obj, path)
        if c is not None:
            return "container", c, None
        plain, tag = type_tags.leaf(obj, path, allow_pickle)
    except type_tags.Unsupported:
        if not allow_pickle:
            raise
        plain, tag = type_tags.pickled(obj, path)
    return ("leaf",) + (_encode_value(plain, path),) + (tag,)


def _emit(node, path, out, allow_pickle):
    what, payload, _ = node
    if what == "tensor":
        out.append((path + TENSOR, "tensor", payload))
        return
    if what == "leaf":
        out.append((path + payload[0], "file", payload[1]))
        return
    kind, items, tag = payload
    if kind == "dict":
        keys = [k for k, _ in items]
        names = [_key_name(k, path) for k in keys]
        values = [v for _, v in items]
    else:
        keys, names, values = None, [str(i) for i in range(len(items))], items
    paths = [_child(path, n) for n in names]
    kids = [_classify(v, p, allow_pickle) for p, v in zip(paths, values)]
    tags = {n: k[2] for n, k in zip(names, kids) if k[2] is not None}
    if tag is not None:
        tags[""] = tag
    if kind == "dict":
        _check_names(keys, names, kids, path, bool(tags) or any(type(k) is int for k in keys))
    meta = _meta(kind, keys, names, tags)
    if meta is not None:
        out.append((_child(path, DIR_META), "file", meta))
    for p, k in zip(paths, kids):
        if k[0] == "tensor":  # the common leaf, without a call
            out.append((p + TENSOR, "tensor", k[1]))
        else:
            _emit(k, p, out, allow_pickle)


def _key_name(k, path):
    """The name of a dict key that round-trips with its type (``str`` or ``int``)."""
    if type(k) not in (str, int):
        raise UnsavableState("cannot save key %r (a %s) at %r: dict keys must be str or int to come back "
                           "as they were" % (k, type(k).__name__, path or "/"))
    try:
        return name(k)
    except ValueError as e:
        raise UnsavableState("cannot save key %r at %r: %s" % (k, path or "/", e)) from None


def _entry_name(n, kid):
    """The name a child ``n`` stored as ``kid`` (see :func:`_classify`) takes in its directory."""
    if kid[0] == "container":
        return n
    if kid[0] == "tensor":
        return n + TENSOR
    return n + kid[1][0]


_DIR_META_OWNER = object()


def _check_names(keys, names, kids, path, has_meta):
    """Refuses keys whose names collide (``1`` and ``"1"``; ``"a"`` holding a str and ``"a.str"``
    holding a dict; a key's directory and the dict's ``dir.meta``)."""
    seen = {}
    entries = {DIR_META: _DIR_META_OWNER} if has_meta else {}
    for k, n, kid in zip(keys, names, kids):
        e = _entry_name(n, kid)
        clash = (n, seen[n]) if n in seen else (e, entries[e]) if e in entries else None
        if clash:
            owner = clash[1]
            raise UnsavableState("cannot save key %r at %r: its name %r collides with %s" % (
                k, path or "/", clash[0], "the dict's dir.meta" if owner is _DIR_META_OWNER else "key %r" % (owner[0],)))
        seen[n] = entries[e] = (k,)  # the key that took the name (formatted only for a message)


def _meta(kind, keys, names, tags):
    """A directory's ``dir.meta``: ``list|tuple\n<n>``; for a dict ``dict\n0`` when empty,
    ``dict\n<n>\nint-keys`` and then the name of each int key, one a line, when it has int keys,
    ``None`` when it needs none (all keys str, no types); then the types, if any
    (:func:`type_tags.meta_lines`)."""
    lines = [kind, str(len(names))]
    if kind == "dict":
        ints = [n for k, n in zip(keys, names) if type(k) is int]
        if ints:
            lines += [INT_KEYS] + ints
        elif names and not tags:
            return None
    return "\n".join(lines + type_tags.meta_lines(tags)).encode()


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
        try:
            return ".str", obj.encode("utf-8")
        except UnicodeEncodeError as e:
            raise UnsavableState("cannot save the str at %r: it is not valid text (%s)" % (path or "/", e)) from None
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return ".bytes", bytes(obj)
    if isinstance(obj, argparse.Namespace):
        return ".argparse.Namespace", pickle.dumps(obj)  # of plain data only (type_tags.container)
    raise TypeError("cannot save a %s at %r (tensors, arrays, dict, list, tuple, str, int, float, bool, "
                    "bytes, None and argparse.Namespace can be saved)" % (type(obj).__name__, path))


# ---------------------------------------------------------------- entries -> state

def decode_value(suffix, data, key="", allow_pickle=False):
    """The value a file with ``suffix`` (one of :data:`VALUE_SUFFIXES`) holds; a :class:`TenplexError`
    naming ``key`` when it holds no such value."""
    try:
        return _decoded(suffix, data, key, allow_pickle)
    except type_restore.MALFORMED as e:
        raise TenplexError("%r should hold a %s value but does not (%s: %.200s)"
                           % (type_tags.where(key), suffix[1:], type(e).__name__, e)) from None


def _decoded(suffix, data, key, allow_pickle):
    if suffix == ".none":
        return None
    if suffix == ".argparse.Namespace":
        return namespace_pickle.load(data, type_tags.where(key), allow_pickle)
    text = data.decode("utf-8") if suffix != ".bytes" else None
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
    return data


def unflatten(entries, prefix, read_file, read_tensor, as_torch=None, allow_pickle=False, keep=None):
    """The state below ``prefix`` from a recursive listing's ``entries`` (dicts with ``path``,
    ``type`` and, for tensors, ``dtype`` and ``shape``), in the listing's order.

    ``read_file(path) -> bytes`` and ``read_tensor(entry) -> tensor`` read one entry. Files of
    another writer (no known suffix) come back as their bytes. Types recorded in ``dir.meta`` are
    restored (:mod:`tenplex.wire.type_tags`): tensors saved as numpy arrays come back as numpy arrays,
    others as ``read_tensor`` gives them, unless ``as_torch`` is ``True`` (every tensor as torch) or
    ``False`` (every tensor as numpy). ``allow_pickle`` lets pickled leaves load (they run code);
    ``keep(value)`` names values to give back as they are (the caller's own tensors)."""
    root = prefix.rstrip("/") + "/"
    tree = {}
    markers = {}
    for e in entries:
        parts = e["path"][len(root):].split("/")
        node = tree
        for d in parts[:-1]:
            node = node.setdefault(d, {})
            if not isinstance(node, dict):
                raise TenplexError("%r is both a value and a directory" % "/".join(parts[:-1]))
        leaf = parts[-1]
        if leaf == DIR_META:
            markers["/".join(parts[:-1])] = dir_meta_lines(read_file(e["path"]), "/".join(parts[:-1]))
        elif e["type"] == "tensor":
            node[leaf[:-len(TENSOR)] if leaf.endswith(TENSOR) else leaf] = read_tensor(e)
        else:
            key, value = _leaf_value(leaf, read_file(e["path"]), "/".join(parts), allow_pickle)
            node[key] = value
    opts = {"as_torch": as_torch, "allow_pickle": allow_pickle, "keep": keep or (lambda v: False)}
    try:
        return _rebuild(tree, "", markers, opts)
    except RecursionError:
        raise TenplexError("the tree below %s is nested too deeply to load" % prefix) from None


def dir_meta_lines(data, path):
    try:
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError as e:
        raise TenplexError("the dir.meta of %r is not text: %s" % (type_tags.where(path), e)) from None


def _leaf_value(leaf, data, path, allow_pickle):
    for s in VALUE_SUFFIXES:
        if leaf.endswith(s):
            return leaf[:-len(s)], decode_value(s, data, path[:-len(s)], allow_pickle)
    return leaf, data  # a file of another writer: its bytes


def _rebuild(node, path, markers, opts):
    """A directory of the listing as its value; leaves get the types its ``dir.meta`` records."""
    kind, ints, tags = type_tags.parse_meta(markers.get(path) or [], path)
    kids = {}
    for k, v in node.items():
        p = _child(path, k)
        kids[k] = _rebuild(v, p, markers, opts) if isinstance(v, dict) else type_restore.restore(v, tags.get(k), p, opts)
    if kind == "dict" and ints is not None:
        value = _with_int_keys(kids, ints, path)
    elif kind in ("list", "tuple"):
        items = [kids[str(i)] for i in range(len(kids))] if set(kids) == {str(i) for i in range(len(kids))} else None
        if items is None:
            raise TenplexError("list at %r has children %s, not 0..n-1" % (path, sorted(kids)))
        value = tuple(items) if kind == "tuple" else items
    else:
        value = kids
    own = tags.get("")
    return value if own is None else type_restore.restore(value, own, path, opts)


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
