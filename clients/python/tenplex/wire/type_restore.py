"""Loading a saved state's types: a plain form and its tag (:mod:`tenplex.wire.type_tags`) back to the
value it stood for. Classes are found again by ``module:qualname`` only for the kinds that cannot run code
when rebuilt, among the modules already imported, and used only through each kind's safe path
(:mod:`tenplex.wire.safe_classes`); a pickle is loaded only when the loader opts in (``allow_pickle``).
Every tag or value that cannot be loaded exactly raises :class:`TenplexError` naming its key."""

import argparse
import collections
import pickle
import re

import numpy as np

from . import safe_classes, torch_values
from ..errors import TenplexError
from .type_tags import DEFAULT_FACTORIES, PATH_CLASSES, where

#: what a tag or a plain value the tree holds can make a rebuild raise (turned into a TenplexError)
MALFORMED = (KeyError, ValueError, TypeError, AttributeError, IndexError, OverflowError, RuntimeError,
             RecursionError, MemoryError, UnicodeError, SyntaxError)


def restore(value, tag, path, opts):
    """The value a plain ``value`` with ``tag`` stood for (``opts``: ``as_torch``, ``allow_pickle``,
    ``keep``: a predicate for values to keep as they are, e.g. the caller's ``into`` tensors)."""
    if tag is None:
        return _tensor_default(value, opts)
    t = tag.get("t") if isinstance(tag, dict) else None
    fn = _RESTORE.get(t) if isinstance(t, str) else None
    if fn is None:
        raise TenplexError("%r was saved as %.200r, a type this client does not know (a newer client's save?)"
                           % (where(path), tag))
    try:
        return fn(value, tag, path, opts)
    except TenplexError:
        raise
    except safe_classes.Refused as e:
        raise TenplexError("%r was saved as a %s that cannot be loaded here: %s" % (where(path), t, e)) from None
    except MALFORMED as e:
        raise TenplexError("%r was saved as a %s, but its tag or value is malformed (%s: %.200s)"
                           % (where(path), t, type(e).__name__, e)) from None


def _tensor_default(value, opts):
    if opts.get("as_torch") is False and torch_values.is_tensor(value) and not opts["keep"](value):
        return torch_values.as_numpy(value)
    return value


def _as_np(value, opts):
    if torch_values.is_tensor(value) and not opts["keep"](value) and opts.get("as_torch") is not True:
        return torch_values.as_numpy(value)
    return value


def _tensor(value):
    if not (isinstance(value, np.ndarray) or torch_values.is_tensor(value)):
        raise TypeError("a tensor's tag is over a %s" % type(value).__name__)
    return value


def _ndarray(value, tag, path, opts):
    return _as_np(_tensor(value), opts)


def _np_scalar(value, tag, path, opts):
    if opts["keep"](_tensor(value)) or opts.get("as_torch") is True:
        return value
    return np.asarray(_as_np(value, opts))[()]


def _torch_tensor(value, tag, path, opts):
    if opts["keep"](_tensor(value)) or not torch_values.is_tensor(value):
        return _tensor_default(value, opts)
    if tag.get("t") == "Parameter":
        return torch_values.torch.nn.Parameter(value, requires_grad=bool(tag.get("grad")))
    return value.requires_grad_(bool(tag.get("grad"))) if value.is_floating_point() else value


def _enum(value, tag, path, opts):
    return safe_classes.enum_member(tag.get("cls"), _plain(value, str))


def _method(value, tag, path, opts):
    return safe_classes.bound_method(tag.get("cls"), _plain(value, str))


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
    value = dict(_in_order(_plain(value, dict), tag))
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
    return safe_classes.dataclass(tag.get("cls"), _plain(value, dict))


def _namedtuple(value, tag, path, opts):
    return safe_classes.named_tuple(tag.get("cls"), _plain(value, tuple))


def _namespace(value, tag, path, opts):
    if not all(isinstance(k, str) for k in _plain(value, dict)):
        raise TypeError("an argparse.Namespace is saved with str keys")
    ns = argparse.Namespace()
    vars(ns).update(value)
    return ns


def _torch_value(fn):
    def build(value, tag, path, opts):
        if torch_values.torch is None:
            raise TenplexError("%r was saved as a %s, which needs torch to load" % (where(path), tag["t"]))
        return fn(torch_values.torch, value)
    return build


def _dtype(torch, name):
    d = vars(torch).get(_plain(name, str))
    if not isinstance(d, torch.dtype):
        raise TenplexError("torch has no dtype %.100r" % name)
    return d


def _plain(value, kind):
    """``value`` when the tree holds it in the plain form its tag's kind is saved in (``kind``)."""
    if not isinstance(value, kind):
        raise TypeError("its plain form is a %s, not the %s saving writes" % (type(value).__name__,
                                                                             getattr(kind, "__name__", kind)))
    return value


def _path(value, tag):
    cls = PATH_CLASSES.get(tag.get("cls")) if isinstance(tag.get("cls"), str) else None
    if cls is None:
        raise TypeError("%.100r is not a pathlib class" % (tag.get("cls"),))
    return cls(_plain(value, str))


_DTYPE_STR = re.compile(r"[<>|=]?[A-Za-z][0-9]{0,4}(\[[0-9]{0,4}[A-Za-z]{1,3}\])?")


def _np_dtype(value):
    if not _DTYPE_STR.fullmatch(_plain(value, str)):  # the form dtype.str has: no shapes, no fields
        raise ValueError("%.100r is not a numpy dtype's str" % value)
    d = np.dtype(value)
    if d.fields is not None:
        raise TypeError("a structured dtype is not one saving writes")
    return d


def _size(torch, value):
    if not all(type(n) is int for n in _plain(value, tuple)):
        raise TypeError("a torch.Size holds ints")
    return torch.Size(value)


def _dtensor(value, tag, path, opts):
    if opts["keep"](value):  # the caller's DTensor, filled by tenplex.dtensor_load
        return value
    raise TenplexError("%r was saved as a DTensor (global shape %s on a mesh of %s); load it into a DTensor: "
                       "tenplex.load(..., into=state) with a DTensor there, on the mesh it should have now"
                       % (where(path), tag.get("shape"), tag.get("mesh")))


_RESTORE = {
    "DTensor": _dtensor,
    "ndarray": _ndarray,
    "np.scalar": _np_scalar,
    "Parameter": _torch_tensor,
    "tensor": _torch_tensor,
    "enum": _enum,
    "complex": lambda v, tag, path, opts: complex(_plain(v, str)),
    "bytearray": lambda v, tag, path, opts: bytearray(_plain(v, bytes)),
    "memoryview": lambda v, tag, path, opts: memoryview(_plain(v, bytes)),
    "path": lambda v, tag, path, opts: _path(v, tag),
    "torch.dtype": _torch_value(_dtype),
    "torch.device": _torch_value(lambda torch, v: torch.device(_plain(v, str))),
    "np.dtype": lambda v, tag, path, opts: _np_dtype(v),
    "method": _method,
    "pickle": _pickle,
    "OrderedDict": _dict_kind,
    "Counter": _dict_kind,
    "defaultdict": _dict_kind,
    "dataclass": _dataclass,
    "set": lambda v, tag, path, opts: set(_plain(v, list)),
    "frozenset": lambda v, tag, path, opts: frozenset(_plain(v, list)),
    "torch.Size": _torch_value(_size),
    "namedtuple": _namedtuple,
    "Namespace": _namespace,
}
