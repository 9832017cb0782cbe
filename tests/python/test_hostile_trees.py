"""A saved tree is data, never code: what tenplex.load does with a tree it did not write.

Against a real daemon (TENPLEX_ADDR): trees written over plain REST, as any client of the daemon could,
sealed and loaded with ``tenplex.load``:
(a) an ``.argparse.Namespace`` leaf whose pickle calls ``os.system`` is refused without running it;
(b) type tags naming modules the trainer has not imported (``this``, ``unittest.__main__``) import nothing;
(c) tags naming classes of this process whose ``__new__``, ``_make``, property setter or metaclass would
    run code are refused without a call;
(d) malformed typed trees (a ``path`` tag of an unknown class, an ``.int`` of 5000 digits, a ``set`` tag
    over unhashable items) raise ``TenplexError`` naming the key.
Then a seeded fuzzer (no daemon): thousands of random and hostile trees (dir.meta kinds, counts, int keys
and type tags; leaves of every suffix with random and hostile bytes) through the tree codec: each loads
or raises ``TenplexError``, and nothing is imported or called. ``TENPLEX_FUZZ_SEED``/``TENPLEX_FUZZ_CASES``
choose the seed and the number of cases. Prints OK at the end; any failure raises."""

import argparse
import collections
import dataclasses
import enum
import json
import os
import pickle
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402

import tenplex  # noqa: E402
from tenplex.errors import TenplexError  # noqa: E402
from tenplex.wire import routes, transfer, tree_codec  # noqa: E402

ADDR = os.environ.get("TENPLEX_ADDR")
CALLS = []  # every call a hostile tag could make into this module's classes lands here
NOT_IMPORTED = ["this", "antigravity", "unittest.__main__", "turtle", "idlelib", "http.server", "xmlrpc.server",
                "webbrowser", "pydoc", "ftplib", "smtplib"]


# ---------------------------------------------------------------- classes whose code a tag must never run

class Meta(type):
    def __getitem__(cls, name):
        CALLS.append("Meta.__getitem__")
        return 1

    def __getattr__(cls, name):
        CALLS.append("Meta.__getattr__ " + name)
        raise AttributeError(name)

    def __call__(cls, *a, **k):
        CALLS.append("Meta.__call__")
        return super().__call__(*a, **k)


class NewRuns:
    def __new__(cls, *a, **k):
        CALLS.append("NewRuns.__new__")
        return super().__new__(cls)

    def __init__(self):
        CALLS.append("NewRuns.__init__")

    def method(self):
        CALLS.append("NewRuns.method")


class WithMeta(metaclass=Meta):
    def method(self):
        CALLS.append("WithMeta.method")


class FakeTuple(tuple):
    _fields = ("a",)

    @classmethod
    def _make(cls, items):
        CALLS.append("FakeTuple._make")
        return tuple.__new__(cls, items)

    def __new__(cls, *a):
        CALLS.append("FakeTuple.__new__")
        return tuple.__new__(cls, a)


@dataclasses.dataclass
class Guarded:
    x: int = 0

    @property
    def y(self):
        return 0

    @y.setter
    def y(self, v):
        CALLS.append("Guarded.y setter")

    def __setattr__(self, k, v):
        CALLS.append("Guarded.__setattr__")
        object.__setattr__(self, k, v)

    def __post_init__(self):
        CALLS.append("Guarded.__post_init__")


class Color(enum.Enum):
    RED = 1


Pair = collections.namedtuple("Pair", "a b")


class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + MARKER,))


MARKER = os.path.join(tempfile.mkdtemp(prefix="tenplex-hostile-"), "ran")
THIS = "__main__" if __name__ == "__main__" else __name__
HOSTILE_CLASSES = ["%s:%s" % (THIS, n) for n in ("NewRuns", "WithMeta", "FakeTuple", "Guarded", "Meta", "Evil",
                                                 "Color", "Pair", "CALLS", "os", "NewRuns.method")]
HOSTILE_CLASSES += ["this:x", "unittest.__main__:main", "unittest.__main__:TestProgram", "os:system",
                    "subprocess:Popen", "builtins:eval", "builtins:type", "builtins:object", "builtins:dict",
                    "argparse:Namespace", "collections:OrderedDict", "enum:Enum", "pathlib:Path", ":", "",
                    "os", "os:", ":system", "os:path.join", "sys:modules", "antigravity:geohash", 7, None,
                    ["os", "system"], {"m": "os"}, "a" * 300 + ":b"]


def raises(fn, *words):
    try:
        fn()
    except TenplexError as e:
        for w in words:
            assert w in str(e), (w, str(e))
        return str(e)
    raise AssertionError("no TenplexError (expected one saying %s)" % (words,))


# ---------------------------------------------------------------- against the daemon: written over REST, loaded

def saved(c, job, entries, step=1):
    """Writes ``entries`` (path, bytes) as rank 0's tree of ``job`` over plain REST and seals it (world 1)."""
    prefix = routes.save_dir(job, 0)
    for rel, data in entries:
        c.request("PUT", routes.files_route(prefix + "/" + rel), ok=(200, 201), params={"replace": "true"},
                  data=data)
    c.request("POST", routes.seal_route(job, step, 0), json={"world": 1})


def meta(kind, n, types=None):
    lines = [kind, str(n)] + (["types", json.dumps(types)] if types is not None else [])
    return "\n".join(lines).encode()


def test_against_daemon():
    c = tenplex.Client(ADDR)
    ns = pickle.dumps(argparse.Namespace(lr=0.1, evil=Evil()))
    saved(c, "hostile-ns", [("ok.int", b"1"), ("args.argparse.Namespace", ns)])
    raises(lambda: tenplex.load(job="hostile-ns", rank=0, client=c, shared=False), "'args'", "allow_pickle=True")
    assert not os.path.exists(MARKER), "the pickle ran os.system"
    # a Namespace of plain data still loads (as the prototype's client wrote it), no opt-in needed
    saved(c, "plain-ns", [("args.argparse.Namespace", pickle.dumps(argparse.Namespace(lr=0.5, layers=[1, 2])))])
    state, step = tenplex.load(job="plain-ns", rank=0, client=c, shared=False)
    assert vars(state["args"]) == {"lr": 0.5, "layers": [1, 2]} and step == 1, state

    for n, cls in enumerate(["this:Zen", "unittest.__main__:main"]):
        kind = "enum" if n == 0 else "method"
        saved(c, "hostile-import-%d" % n, [("dir.meta", meta("dict", 1, {"x": {"t": kind, "cls": cls}})),
                                           ("x.str", b"main")])
        raises(lambda: tenplex.load(job="hostile-import-%d" % n, rank=0, client=c, shared=False), "'x'",
               "not imported in this process")
    for m in NOT_IMPORTED[:2] + ["unittest.__main__"]:
        assert m not in sys.modules, m

    calls = [("method", "%s:NewRuns" % THIS, b"method", "own __new__"),
             ("method", "%s:WithMeta" % THIS, b"method", None),
             ("namedtuple", "%s:FakeTuple" % THIS, None, None),
             ("dataclass", "%s:Guarded" % THIS, None, "not a plain attribute"),
             ("enum", "%s:WithMeta" % THIS, b"RED", "is not an enum here")]
    for n, (kind, cls, leaf, words) in enumerate(calls):
        job = "hostile-call-%d" % n
        if leaf is not None:
            saved(c, job, [("dir.meta", meta("dict", 1, {"x": {"t": kind, "cls": cls}})), ("x.str", leaf)])
        elif kind == "namedtuple":
            saved(c, job, [("x/dir.meta", meta("tuple", 1, {"": {"t": kind, "cls": cls}})), ("x/0.int", b"1")])
        else:
            saved(c, job, [("x/dir.meta", meta("dict", 1, {"": {"t": kind, "cls": cls}})), ("x/y.int", b"1")])
        try:
            state, _ = tenplex.load(job=job, rank=0, client=c, shared=False)
            # made the safe way (object.__new__, tuple.__new__), without calling the class's own code
            assert (kind, cls.split(":")[1]) in (("method", "WithMeta"), ("namedtuple", "FakeTuple")), (kind, cls, state)
            assert type(state["x"].__self__ if kind == "method" else state["x"]).__name__ == cls.split(":")[1]
        except TenplexError as e:
            assert words is None or words in str(e), (words, str(e))
        assert not CALLS, (kind, cls, CALLS)

    malformed = [([("dir.meta", meta("dict", 1, {"p": {"t": "path", "cls": "NoSuchPath"}})), ("p.str", b"/x")],
                  ["'p'", "path"]),
                 ([("big.int", b"9" * 5000)], ["'big'", "int"]),
                 ([("s/dir.meta", meta("list", 2, {"": {"t": "set"}})), ("s/0/dir.meta", meta("list", 0)),
                   ("s/1/dir.meta", meta("list", 0))], ["'s'", "set"])]
    for n, (entries, words) in enumerate(malformed):
        job = "malformed-%d" % n
        saved(c, job, entries)
        raises(lambda: tenplex.load(job=job, rank=0, client=c, shared=False), *words)

    # what the client writes itself still loads exactly: a Namespace of typed values, a dataclass, an enum
    state = {"args": argparse.Namespace(lr=0.1, mode=Color.RED, path=__import__("pathlib").Path("/d")),
             "pair": Pair(1, "b"), "color": Color.RED, "od": collections.OrderedDict(b=1, a=2)}
    tenplex.save(state, job="own-types", step=3, rank=0, world=1, client=c, shared=False)
    back, step = tenplex.load(job="own-types", rank=0, client=c, shared=False)
    assert step == 3 and type(back["args"]) is argparse.Namespace and vars(back["args"]) == vars(state["args"])
    assert back["pair"] == state["pair"] and type(back["pair"]) is Pair and back["color"] is Color.RED
    assert list(back["od"].items()) == [("b", 1), ("a", 2)] and type(back["od"]) is collections.OrderedDict
    assert not CALLS, CALLS


# ---------------------------------------------------------------- the tree fuzzer (no daemon)

KINDS = ["dict", "list", "tuple", "set", "", "dict\n0", "list\n-1", "list\n99999999999999999999", "\x00", "types"]
TAG_KINDS = ["enum", "method", "dataclass", "namedtuple", "Namespace", "path", "pickle", "OrderedDict", "Counter",
             "defaultdict", "set", "frozenset", "torch.Size", "torch.dtype", "torch.device", "np.dtype",
             "complex", "bytearray", "memoryview", "ndarray", "np.scalar", "tensor", "Parameter", "unknown", None,
             7, ["enum"]]


def leaf_bytes(rng):
    choices = [b"", b"1", b"-0", b"True", b"None", b"nan", b"1e999", b"9" * rng.choice([10, 4301, 5000]),
               b"\xff\xfe", b"RED", b"method", b"/etc/passwd", b"float16", b"cuda:99", b"(2,)i4", b"O",
               pickle.dumps(argparse.Namespace(a=1)), pickle.dumps(argparse.Namespace(e=Evil())),
               pickle.dumps(Evil()), pickle.dumps(os.system), b"\x80\x04K\x01.", b"cos\nsystem\n(S'true'\ntR.",
               bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40)))]
    return rng.choice(choices)


def tag(rng):
    t = rng.choice(TAG_KINDS)
    out = {"t": t}
    if rng.random() < 0.8:
        out["cls"] = rng.choice(HOSTILE_CLASSES)
    if rng.random() < 0.3:
        out["order"] = rng.choice([["a", "b"], [1, [2]], "x", None, ["0", "1", "2"]])
    if rng.random() < 0.2:
        out["factory"] = rng.choice(["int", "list", "os.system", None, 3])
    if rng.random() < 0.2:
        out["grad"] = rng.choice([True, "yes", None])
    if rng.random() < 0.1:
        out["metadata"] = {"k": [1, 2]}
    return out if rng.random() < 0.95 else rng.choice([[], "x", 1, None])


def random_tree(rng, prefix, depth):
    """Entries (path, type, payload) of a random directory below ``prefix``."""
    out = []
    n = rng.randrange(0, 5)
    names = [rng.choice(["0", "1", "2", "a", "b", "__class__", "__dict__", "x.y", "-1", "9" * 20]) for _ in range(n)]
    if rng.random() < 0.8:
        types = {nm: tag(rng) for nm in names if rng.random() < 0.6}
        if rng.random() < 0.5:
            types[""] = tag(rng)
        lines = [rng.choice(KINDS), str(rng.choice([n, n + 1, 0, -3]))]
        if rng.random() < 0.3:
            lines += ["int-keys"] + rng.sample(names + ["7", "x"], k=min(2, len(names) + 2))
        if types or rng.random() < 0.1:
            lines += ["types", json.dumps(types) if rng.random() < 0.95 else "{not json"]
        out.append((prefix + "dir.meta", "file", "\n".join(lines).encode()))
    for nm in names:
        r = rng.random()
        if r < 0.25 and depth < 4:
            out += random_tree(rng, prefix + nm + "/", depth + 1)
        elif r < 0.4:
            out.append((prefix + nm + ".numpy.ndarray", "tensor", np.arange(rng.randrange(0, 4), dtype=np.float32)))
        else:
            suffix = rng.choice(tree_codec.VALUE_SUFFIXES + ("", ".weird"))
            out.append((prefix + nm + suffix, "file", leaf_bytes(rng)))
    return out


def load_entries(entries, allow_pickle=False):
    files = {p: d for p, k, d in entries if k == "file"}
    tensors = {p: d for p, k, d in entries if k == "tensor"}
    listing = [{"path": "/t/" + p, "type": k} for p, k, _ in entries]
    return tree_codec.unflatten(listing, "/t", lambda path: files[path[len("/t/"):]],
                                lambda e: tensors[e["path"][len("/t/"):]], as_torch=False, allow_pickle=allow_pickle)


def test_tree_fuzzer():
    seed = int(os.environ.get("TENPLEX_FUZZ_SEED", "20261128"))
    cases = int(os.environ.get("TENPLEX_FUZZ_CASES", "4000"))
    rng = random.Random(seed)
    modules = set(sys.modules)
    loaded = refused = 0
    for i in range(cases):
        entries = random_tree(rng, "", 0)
        try:
            load_entries(entries)
            loaded += 1
        except TenplexError:
            refused += 1
        except Exception as e:  # noqa: BLE001 - the failure this test looks for
            raise AssertionError("seed %d case %d: %s: %s\n%r" % (seed, i, type(e).__name__, e, entries)) from e
        assert not CALLS, (seed, i, CALLS, entries)
        assert not os.path.exists(MARKER), (seed, i, entries)
    new = sorted(m for m in set(sys.modules) - modules if m.split(".")[0] not in ("numpy", "torch"))
    assert not new, ("modules imported by loading", new)
    assert not [m for m in NOT_IMPORTED if m in sys.modules]
    assert loaded > cases // 20 and refused > cases // 4, (loaded, refused)  # both paths were exercised
    print("tree fuzzer: seed %d, %d cases, %d loaded, %d refused with TenplexError" % (seed, cases, loaded, refused))


if __name__ == "__main__":
    for m in NOT_IMPORTED:
        assert m not in sys.modules, m
    if ADDR:
        test_against_daemon()
    test_tree_fuzzer()
    print("OK")
