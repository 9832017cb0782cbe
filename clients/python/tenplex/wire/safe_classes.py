"""Classes a saved tree names, found and used without running anything the tree chose.

A type tag names a class as ``module:qualname``. Loading never imports: the class is looked up only in
the modules this process has already imported (``sys.modules``), and by static lookups (a module's or a
class's own ``__dict__`` along its MRO), so no module ``__getattr__``, metaclass hook or descriptor runs.
Each kind is checked before its class is used, and its values are made only the way saving took them
apart: an enum member from the enum's member map, a named tuple by ``tuple.__new__``, a dataclass or a
bound method's instance by ``object.__new__`` (never a class's own ``__new__`` or ``__init__``), its
fields set in its ``__dict__`` or its slots (never through a property or another descriptor)."""

import enum
import sys
import types

_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_MRO = type.__dict__["__mro__"]
_SLOT = types.MemberDescriptorType


class Refused(ValueError):
    """A class name or value that is not one of the kind its tag says (the reason, without the key)."""


def lookup(name):
    """The object ``name`` (``module:qualname``) names among the modules already imported; raises
    :class:`Refused` saying why not."""
    if not isinstance(name, str):
        raise Refused("the class name %r is not a string" % (name,))
    module, sep, qual = name.partition(":")
    if not sep or not module or not qual:
        raise Refused("%r is not a class name of the form module:qualname" % name)
    mod = sys.modules.get(module)
    if not isinstance(mod, types.ModuleType):
        raise Refused("its module %s is not imported in this process (loading never imports a module a tree "
                      "names: import it before tenplex.load)" % module)
    obj = mod
    for part in qual.split("."):
        obj = _own_attribute(obj, part, name)
    return obj


def _own_attribute(obj, part, name):
    if isinstance(obj, types.ModuleType):
        found = obj.__dict__.get(part, _MISSING)
    elif isinstance(obj, type):
        found = static(obj, part)
    else:
        found = _MISSING
    if found is _MISSING:
        raise Refused("%s has no %s" % (name, part))
    return found


_MISSING = object()


def static(cls, name):
    """``name`` as found in the ``__dict__`` of ``cls`` or a class of its MRO, unbound, or :data:`_MISSING`."""
    for c in _TYPE_MRO.__get__(cls):
        d = _TYPE_DICT.__get__(c)
        if name in d:
            return d[name]
    return _MISSING


def a_class(name, is_kind, what):
    """The class ``name`` names, when it is a class of the kind ``what`` (``is_kind(cls)``)."""
    cls = lookup(name)
    if not isinstance(cls, type) or not is_kind(cls):
        raise Refused("%s is not %s here" % (name, what))
    return cls


def enum_member(name, member):
    cls = a_class(name, lambda c: issubclass(c, enum.Enum), "an enum")
    members = static(cls, "_member_map_")
    value = members.get(member, _MISSING) if isinstance(members, dict) and isinstance(member, str) else _MISSING
    if value is _MISSING or type(value) is not cls:
        raise Refused("the enum %s has no member %r here" % (name, member))
    return value


def named_tuple(name, items):
    cls = a_class(name, lambda c: issubclass(c, tuple) and _fields(c) is not None, "a named tuple")
    if len(items) != len(_fields(cls)):
        raise Refused("the named tuple %s has %d fields, not the %d saved" % (name, len(_fields(cls)), len(items)))
    return tuple.__new__(cls, items)


def _fields(cls):
    f = static(cls, "_fields")
    return f if isinstance(f, tuple) and all(isinstance(x, str) for x in f) else None


def dataclass(name, fields):
    cls = a_class(name, lambda c: isinstance(static(c, "__dataclass_fields__"), dict), "a dataclass")
    obj = bare_instance(cls, name)
    own = _instance_dict(cls, obj)
    for k, v in fields.items():
        if not isinstance(k, str):
            raise Refused("the dataclass %s has a field name %r that is not a string" % (name, k))
        attr = static(cls, k)
        if isinstance(attr, _SLOT):
            attr.__set__(obj, v)
        elif hasattr(type(attr), "__set__") or own is None:
            raise Refused("the field %s of %s is not a plain attribute here (setting it would run code)" % (k, name))
        else:
            own[k] = v
    return obj


def bound_method(name, method):
    cls = a_class(name, lambda c: True, "a class")
    fn = static(cls, method) if isinstance(method, str) else _MISSING
    if not isinstance(fn, types.FunctionType):
        raise Refused("%r is not a method of %s here" % (method, name))
    return types.MethodType(fn, bare_instance(cls, name))


def bare_instance(cls, name):
    """An instance of ``cls`` made by ``object.__new__``, only for a class whose ``__new__`` is object's."""
    if static(cls, "__new__") is not object.__dict__["__new__"]:
        raise Refused("%s makes its instances with its own __new__, which loading does not call" % name)
    try:
        return object.__new__(cls)
    except TypeError as e:
        raise Refused("an instance of %s cannot be made without calling its code: %s" % (name, e)) from None


def _instance_dict(cls, obj):
    """The instance's own ``__dict__``, or None when its class keeps none (slots) or makes it with code."""
    if not isinstance(static(cls, "__dict__"), types.GetSetDescriptorType):
        return None
    return object.__getattribute__(obj, "__dict__")
