"""The ``.argparse.Namespace`` leaves of older trees (the prototype's client and this one before it kept a
Namespace as plain data): pickles, read without running code.

Unless the loader opts in to pickles (``allow_pickle=True``), such a pickle is read by an unpickler that
finds one class only, ``argparse.Namespace`` (made by ``object.__new__``, its attributes put in its
``__dict__``), and refuses every other global, so a pickle that would call ``os.system`` or any other
function raises instead: the values inside can only be those pickle builds without a global (str, bytes,
numbers, bools, None, lists, tuples, dicts, sets)."""

import argparse
import io
import pickle

from ..errors import TenplexError


class _NamespaceOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ("argparse", "Namespace"):
            return argparse.Namespace
        raise pickle.UnpicklingError("it names %s.%s" % (module, name))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("it refers to an object outside itself")


def load(data, key, allow_pickle):
    """The ``argparse.Namespace`` a leaf's bytes hold; a :class:`TenplexError` naming ``key`` when they hold
    anything else, or, without ``allow_pickle``, anything that needs more than the Namespace class."""
    if allow_pickle:
        value = pickle.loads(data)
    else:
        try:
            value = _NamespaceOnly(io.BytesIO(data)).load()
        except Exception as e:  # noqa: BLE001 - any malformed pickle is refused, naming the key
            raise TenplexError("%r holds a pickled argparse.Namespace that needs more than plain data to load "
                               "(%s: %.200s); loading it could run code, so load it with allow_pickle=True "
                               "if you trust the store" % (key, type(e).__name__, e)) from None
    if type(value) is not argparse.Namespace:
        raise TenplexError("%r should hold a pickled argparse.Namespace but holds a %s"
                           % (key, type(value).__name__))
    return value
