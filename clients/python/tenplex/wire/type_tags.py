"""The Python types of a saved state, recorded beside the tree so that :func:`tenplex.load` gives
back what ``torch.load`` gives back (docs/CLIENTS.md, "What round-trips").

The tree itself keeps the prototype's layout: every value is stored in its plain form (a numpy
array as a tensor, a ``pathlib.Path`` as a ``.str``, an ``OrderedDict`` as a dict, a ``set`` as a
list) and its type is a *tag* in the ``dir.meta`` of the directory that holds it, after a line
``types``: one line of JSON, child name (``""`` for the directory itself) to tag, e.g.
``{"": {"t": "OrderedDict"}, "lr": {"t": "ndarray"}}``. A reader that does not know tags (the
prototype's, the JVM client) reads the plain forms.

Classes are recorded by ``module:qualname`` and found again by import on load, and only of kinds
that cannot run code when rebuilt: ``Enum`` members (by name), dataclasses (fields set without
calling ``__init__``), named tuples, and a bound method's class (the method is bound to an empty
instance, ``cls.__new__(cls)``). Anything else is refused naming its key, unless the caller opts
in to pickling it (``allow_pickle=True``: loading such a leaf runs code, so it is refused again on
load unless the loader opts in too). Loading is :mod:`tenplex.wire.type_restore`'s."""

import argparse
import collections
import dataclasses
import enum
import inspect
import json
import pathlib
import pickle

import numpy as np

from . import dtensor_layout, safe_classes, torch_values
from ..errors import TenplexError

TYPES = "types"
PATH_CLASSES = {c.__name__: c for c in (pathlib.PurePath, pathlib.PurePosixPath, pathlib.PureWindowsPath,
                                  pathlib.Path, pathlib.PosixPath, pathlib.WindowsPath)}
DEFAULT_FACTORIES = {f.__name__: f for f in (int, float, complex, str, bytes, bool, list, dict, set, frozenset, tuple)}
PICKLE_HINT = ("pass allow_pickle=True to store it as a pickle (loading a pickle runs code: only for a store "
               "you trust)")
SUPPORTED = ("tensors, numpy arrays and scalars, dict, OrderedDict, Counter, defaultdict, list, tuple, named "
             "tuples, torch.Size, set, frozenset, str, int, float, complex, bool, bytes, bytearray, None, "
             "pathlib paths, torch.dtype, torch.device, numpy dtypes, Enum members, dataclasses, bound "
             "methods found by name on their class, argparse.Namespace")


class Unsupported(TypeError):
    """A value the codec cannot keep exactly (a ``TypeError`` naming the key)."""


def where(path):
    return path or "/"


def class_name(cls):
    """``module:qualname`` of a class that loading finds again by that name (in its module, once the
    module is imported: :mod:`tenplex.wire.safe_classes`), else ``None``."""
    q = getattr(cls, "__qualname__", "")
    if "<locals>" in q or not isinstance(getattr(cls, "__module__", None), str):
        return None
    try:
        return cls.__module__ + ":" + q if safe_classes.lookup(cls.__module__ + ":" + q) is cls else None
    except safe_classes.Refused:
        return None


def _recordable(cls, path, what):
    n = class_name(cls)
    if n is None:
        raise Unsupported("cannot save the %s %s at %r: its class cannot be found by name on load (defined in a "
                          "function?); %s" % (what, cls.__qualname__, where(path), PICKLE_HINT))
    return n


# ---------------------------------------------------------------- save: a value as (plain form, tag)

def container(obj, path):
    """``(kind, items, tag)`` of a container: kind ``"dict"`` (items: key-value pairs), ``"list"`` or
    ``"tuple"`` (items: values); ``None`` when ``obj`` is no container."""
    t = type(obj)
    if t is dict:
        return "dict", list(obj.items()), None
    if t is list:
        return "list", list(obj), None
    if t is tuple:
        return "tuple", list(obj), None
    if isinstance(obj, dict):
        return "dict", list(obj.items()), _dict_tag(obj, path)
    if isinstance(obj, (set, frozenset)) and t in (set, frozenset):
        return "list", _set_items(obj), {"t": t.__name__}
    if isinstance(obj, tuple):
        if torch_values.torch is not None and t is torch_values.torch.Size:
            return "tuple", list(obj), {"t": "torch.Size"}
        if hasattr(t, "_fields") and hasattr(t, "_make"):
            return "tuple", list(obj), {"t": "namedtuple", "cls": _recordable(t, path, "named tuple")}
    if t is argparse.Namespace and not pickle_without_globals(vars(obj)):
        return "dict", list(vars(obj).items()), {"t": "Namespace"}  # its attributes, typed as any values are
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return "dict", list(_dataclass_fields(obj).items()), {"t": "dataclass",
                                                               "cls": _recordable(t, path, "dataclass")}
    if isinstance(obj, (dict, list, tuple, set, frozenset)):
        raise Unsupported("cannot save a %s at %r: a subclass of %s that the codec does not know; %s"
                          % (t.__name__, where(path), t.__mro__[1].__name__, PICKLE_HINT))
    return None


_PICKLE_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def pickle_without_globals(value):
    """Whether pickle writes ``value`` without naming any class or function (plain data: None, numbers,
    str, bytes and lists, tuples, dicts, sets of them), so that it loads without running code."""
    t = type(value)
    if t in _PICKLE_PLAIN:
        return t is not complex  # complex pickles through its constructor
    if t in (list, tuple, set, frozenset):
        return all(pickle_without_globals(v) for v in value)
    if t is dict:
        return all(pickle_without_globals(k) and pickle_without_globals(v) for k, v in value.items())
    return False


def _set_items(s):
    try:
        return sorted(s)
    except TypeError:
        return list(s)


def _dataclass_fields(obj):
    names = [f.name for f in dataclasses.fields(obj)]
    extra = [k for k in getattr(obj, "__dict__", {}) if k not in names]
    return {n: getattr(obj, n) for n in names + extra}


def _dict_tag(obj, path):
    t = type(obj)
    attrs = dict(getattr(obj, "__dict__", {}))
    if t is collections.OrderedDict:
        tag = {"t": "OrderedDict"}
        if "_metadata" in attrs:
            tag["metadata"] = _json_exact(attrs.pop("_metadata"), path, "_metadata")
    elif t is collections.Counter:
        tag = {"t": "Counter"}
    elif t is collections.defaultdict:
        f = obj.default_factory
        if f is not None and DEFAULT_FACTORIES.get(getattr(f, "__name__", None)) is not f:
            raise Unsupported("cannot save the defaultdict at %r: its default_factory %r is not one of %s; %s"
                              % (where(path), f, ", ".join(DEFAULT_FACTORIES), PICKLE_HINT))
        tag = {"t": "defaultdict", "factory": None if f is None else f.__name__}
    else:
        raise Unsupported("cannot save a %s at %r: a dict subclass the codec does not know; %s"
                          % (t.__name__, where(path), PICKLE_HINT))
    if attrs:
        raise Unsupported("cannot save the %s at %r: its attributes %s would be lost; %s"
                          % (t.__name__, where(path), sorted(attrs), PICKLE_HINT))
    tag["order"] = [str(k) for k in obj]  # kept where a reconfiguration lists the keys in another order
    return tag


def _json_exact(value, path, what):
    try:
        text = json.dumps(value, sort_keys=False, allow_nan=False)
        if json.loads(text) == value:
            return json.loads(text)
    except (TypeError, ValueError):
        pass
    raise Unsupported("cannot save the %s of the dict at %r: %r is not plain JSON data; %s"
                      % (what, where(path), value, PICKLE_HINT))


def tensor_tag(obj, path):
    """The tag of a tensor leaf (``None`` for a plain torch tensor); refuses, naming the key, a
    tensor whose values the store cannot hold."""
    if type(obj) is np.ndarray:  # the common case first
        _check_dtype(obj.dtype in _STORABLE, obj.dtype, path)
        return {"t": "ndarray"}
    if torch_values.is_tensor(obj):
        torch = torch_values.torch
        # the common case in a few attribute reads: a plain dense tensor with values of a dtype the store holds
        # (a quantized tensor's dtype is not one; a subclass, a DTensor included, is not a plain tensor)
        if type(obj) is torch.Tensor and obj.layout is torch.strided and not obj.is_meta \
                and torch_values.short_dtype(obj.dtype) is not None:
            return {"t": "tensor", "grad": True} if obj.requires_grad else None
        if dtensor_layout.is_dtensor(obj):  # its local shard is stored, its layout in the tag
            _check_dtype(torch_values.short_dtype(obj.dtype) is not None, obj.dtype, path)
            return dtensor_layout.tag(obj, where(path))
        if obj.layout != torch.strided:
            raise Unsupported("cannot save the %s tensor at %r: only dense (strided) tensors can be stored; "
                              "save t.to_dense() or %s" % (obj.layout, where(path), PICKLE_HINT))
        if obj.is_meta or obj.is_quantized:
            raise Unsupported("cannot save the %s tensor at %r: it has no values the store can hold; %s"
                              % ("quantized" if obj.is_quantized else "meta", where(path), PICKLE_HINT))
        _check_dtype(torch_values.short_dtype(obj.dtype) is not None, obj.dtype, path)
        if type(obj) is torch.Tensor:  # the common case first (no isinstance walk)
            return {"t": "tensor", "grad": True} if obj.requires_grad else None
        if isinstance(obj, torch.nn.Parameter):
            return {"t": "Parameter", "grad": bool(obj.requires_grad)}
        if type(obj) is not torch.Tensor:
            raise Unsupported("cannot save a %s at %r: a tensor subclass the codec does not know; %s"
                              % (type(obj).__name__, where(path), PICKLE_HINT))
        return {"t": "tensor", "grad": True} if obj.requires_grad else None
    a = obj if isinstance(obj, np.ndarray) else np.asarray(obj)
    _check_dtype(a.dtype in _STORABLE, a.dtype, path)
    if type(obj) is not np.ndarray and not isinstance(obj, np.generic):
        raise Unsupported("cannot save a %s at %r: an ndarray subclass the codec does not know; %s"
                          % (type(obj).__name__, where(path), PICKLE_HINT))
    return {"t": "ndarray"} if isinstance(obj, np.ndarray) else {"t": "np.scalar"}


_STORABLE = {np.dtype(d) for d in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                    np.int64, np.uint64, np.float16, np.float32, np.float64, np.complex64,
                                    np.complex128)}


def _check_dtype(storable, dtype, path):
    if storable:
        return
    raise Unsupported("cannot save the %s array at %r: the store holds %s; %s"
                      % (dtype, where(path), "bool, i8-i64, u8-u64, f16, bf16, f32, f64, c64 and c128", PICKLE_HINT))


def leaf(obj, path, allow_pickle):
    """``(plain value, tag)`` of a leaf that is not a tensor, with the plain value one the codec
    stores as it is (``None``, bool, int, float, str, bytes, and an ``argparse.Namespace`` of plain data,
    which the prototype's layout keeps as a pickle that loads without running code)."""
    t = type(obj)
    if obj is None or t in (bool, int, float, str, bytes, argparse.Namespace):
        return obj, None
    if isinstance(obj, enum.Enum):
        if not isinstance(obj.name, str):
            raise Unsupported("cannot save the %s at %r: a combination of flags has no name; %s"
                              % (t.__name__, where(path), PICKLE_HINT))
        return obj.name, {"t": "enum", "cls": _recordable(t, path, "enum member")}
    if t is complex:
        return repr(obj), {"t": "complex"}
    if t is bytearray:
        return bytes(obj), {"t": "bytearray"}
    if t is memoryview:
        return bytes(obj), {"t": "memoryview"}  # its bytes (torch.save cannot save a memoryview at all)
    if isinstance(obj, pathlib.PurePath) and t.__name__ in PATH_CLASSES and PATH_CLASSES[t.__name__] is t:
        return str(obj), {"t": "path", "cls": t.__name__}
    torch = torch_values.torch
    if torch is not None and t is torch.dtype:
        return str(obj).replace("torch.", "", 1), {"t": "torch.dtype"}
    if torch is not None and t is torch.device:
        return str(obj), {"t": "torch.device"}
    if isinstance(obj, np.dtype) and obj.fields is None and np.dtype(obj.str) == obj:
        return obj.str, {"t": "np.dtype"}
    if inspect.ismethod(obj) and not isinstance(obj.__self__, type):
        cls = type(obj.__self__)
        name = obj.__func__.__name__
        if getattr(cls, name, None) is obj.__func__ and class_name(cls) is not None:
            return name, {"t": "method", "cls": class_name(cls)}
    if allow_pickle:
        try:
            return pickle.dumps(obj), {"t": "pickle"}
        except Exception as e:  # noqa: BLE001 - named with the key
            raise Unsupported("cannot pickle the %s at %r: %s" % (t.__name__, where(path), e)) from None
    raise Unsupported("cannot save a %s at %r (%s can be saved); %s" % (t.__name__, where(path), SUPPORTED,
                                                                       PICKLE_HINT))


def pickled(obj, path):
    """A container the codec refused, pickled as a leaf (``allow_pickle=True``)."""
    try:
        return pickle.dumps(obj), {"t": "pickle"}
    except Exception as e:  # noqa: BLE001
        raise Unsupported("cannot pickle the %s at %r: %s" % (type(obj).__name__, where(path), e)) from None


# ---------------------------------------------------------------- dir.meta

def meta_lines(tags):
    """The lines a ``dir.meta`` ends with for the tags of a directory (none when it has none)."""
    return [TYPES, json.dumps(tags, separators=(",", ":"), sort_keys=True)] if tags else []


def parse_meta(lines, path):
    """``(kind, int key names, tags)`` of a ``dir.meta``'s lines."""
    kind = lines[0] if lines else None
    rest = lines[2:]
    tags = {}
    if TYPES in rest:
        i = rest.index(TYPES)
        try:
            tags = json.loads(rest[i + 1])
        except (IndexError, ValueError) as e:
            raise TenplexError("the dir.meta of %r has a types line that is not JSON: %s" % (where(path), e)) from None
        if not isinstance(tags, dict):
            raise TenplexError("the dir.meta of %r has types that are not a JSON object" % where(path))
        rest = rest[:i]
    ints = rest[1:] if rest and rest[0] == "int-keys" else None
    return kind, ints, tags
