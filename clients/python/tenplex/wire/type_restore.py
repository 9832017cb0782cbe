"""Loading a saved state's types: a plain form and its tag (:mod:`tenplex.wire.type_tags`) back to the
value it stood for. Classes are found again by ``module:qualname`` only for the kinds that cannot run code
when rebuilt; a pickle is loaded only when the loader opts in (``allow_pickle``)."""

import collections
import dataclasses
import enum
import inspect
import pickle
import types as pytypes

import numpy as np

from . import torch_values
from ..errors import TenplexError
from .type_tags import DEFAULT_FACTORIES, PATH_CLASSES, find_class, where


def restore(value, tag, path, opts):
    """The value a plain ``value`` with ``tag`` stood for (``opts``: ``as_torch``, ``allow_pickle``,
    ``keep``: a predicate for values to keep as they are, e.g. the caller's ``into`` tensors)."""
    if tag is None:
        return _tensor_default(value, opts)
    t = tag.get("t") if isinstance(tag, dict) else None
    try:
        fn = _RESTORE[t]
    except KeyError:
        raise TenplexError("%r was saved as %r, a type this client does not know (a newer client's save?)"
                           % (where(path), tag)) from None
    return fn(value, tag, path, opts)


def _tensor_default(value, opts):
    if opts.get("as_torch") is False and torch_values.is_tensor(value) and not opts["keep"](value):
        return torch_values.as_numpy(value)
    return value


def _as_np(value, opts):
    if torch_values.is_tensor(value) and not opts["keep"](value) and opts.get("as_torch") is not True:
        return torch_values.as_numpy(value)
    return value


def _ndarray(value, tag, path, opts):
    return _as_np(value, opts)


def _np_scalar(value, tag, path, opts):
    if opts["keep"](value) or opts.get("as_torch") is True:
        return value
    return np.asarray(_as_np(value, opts))[()]


def _torch_tensor(value, tag, path, opts):
    if opts["keep"](value) or not torch_values.is_tensor(value):
        return _tensor_default(value, opts)
    if tag.get("t") == "Parameter":
        return torch_values.torch.nn.Parameter(value, requires_grad=bool(tag.get("grad")))
    return value.requires_grad_(bool(tag.get("grad"))) if value.is_floating_point() else value


def _resolve(tag, path, check, what):
    name = tag.get("cls", "")
    try:
        cls = find_class(name)
    except Exception as e:  # noqa: BLE001 - named with the key
        raise TenplexError("%r was saved as a %s of class %s, which cannot be found here: %s"
                           % (where(path), what, name, e)) from None
    if not isinstance(cls, type) or not check(cls):
        raise TenplexError("%r was saved as a %s of class %s, which is not one here" % (where(path), what, name))
    return cls


def _enum(value, tag, path, opts):
    cls = _resolve(tag, path, lambda c: issubclass(c, enum.Enum), "enum member")
    try:
        return cls[value]
    except KeyError:
        raise TenplexError("%r was saved as %s.%s, which that enum does not have here" % (where(path), tag["cls"],
                                                                                         value)) from None


def _method(value, tag, path, opts):
    cls = _resolve(tag, path, lambda c: True, "bound method")
    fn = getattr(cls, value, None)
    if not inspect.isfunction(fn):
        raise TenplexError("%r was saved as the method %s of %s, which is not a method there"
                           % (where(path), value, tag["cls"]))
    return pytypes.MethodType(fn, cls.__new__(cls))


def _pickle(value, tag, path, opts):
    if not opts.get("allow_pickle"):
        raise TenplexError("%r holds a pickle (saved with allow_pickle=True); loading it runs code, so load it "
                           "with allow_pickle=True if you trust the store" % where(path))
    return pickle.loads(value)


def _in_order(value, tag):
    order = tag.get("order")
    if not isinstance(order, list) or sorted(order) != sorted(str(k) for k in value):
        return list(value.items())
    by_name = {str(k): k for k in value}
    return [(by_name[n], value[by_name[n]]) for n in order]


def _dict_kind(value, tag, path, opts):
    t = tag["t"]
    value = dict(_in_order(value, tag))
    if t == "OrderedDict":
        out = collections.OrderedDict(value)
        if "metadata" in tag:
            out._metadata = tag["metadata"]
        return out
    if t == "Counter":
        return collections.Counter(value)
    f = tag.get("factory")
    if f is not None and f not in DEFAULT_FACTORIES:
        raise TenplexError("%r was saved as a defaultdict of %r, not a known factory" % (where(path), f))
    return collections.defaultdict(None if f is None else DEFAULT_FACTORIES[f], value)


def _dataclass(value, tag, path, opts):
    cls = _resolve(tag, path, dataclasses.is_dataclass, "dataclass")
    obj = cls.__new__(cls)
    for k, v in value.items():
        object.__setattr__(obj, k, v)
    return obj


def _namedtuple(value, tag, path, opts):
    cls = _resolve(tag, path, lambda c: issubclass(c, tuple) and hasattr(c, "_make"), "named tuple")
    return cls._make(value)


def _torch_value(fn):
    def build(value, tag, path, opts):
        if torch_values.torch is None:
            raise TenplexError("%r was saved as a %s, which needs torch to load" % (where(path), tag["t"]))
        return fn(torch_values.torch, value)
    return build


def _dtype(torch, name):
    d = getattr(torch, name, None)
    if not isinstance(d, torch.dtype):
        raise TenplexError("torch has no dtype %r" % name)
    return d


_RESTORE = {
    "ndarray": _ndarray,
    "np.scalar": _np_scalar,
    "Parameter": _torch_tensor,
    "tensor": _torch_tensor,
    "enum": _enum,
    "complex": lambda v, tag, path, opts: complex(v),
    "bytearray": lambda v, tag, path, opts: bytearray(v),
    "memoryview": lambda v, tag, path, opts: memoryview(v),
    "path": lambda v, tag, path, opts: PATH_CLASSES[tag["cls"]](v),
    "torch.dtype": _torch_value(_dtype),
    "torch.device": _torch_value(lambda torch, v: torch.device(v)),
    "np.dtype": lambda v, tag, path, opts: np.dtype(v),
    "method": _method,
    "pickle": _pickle,
    "OrderedDict": _dict_kind,
    "Counter": _dict_kind,
    "defaultdict": _dict_kind,
    "dataclass": _dataclass,
    "set": lambda v, tag, path, opts: set(v),
    "frozenset": lambda v, tag, path, opts: frozenset(v),
    "torch.Size": _torch_value(lambda torch, v: torch.Size(v)),
    "namedtuple": _namedtuple,
}
