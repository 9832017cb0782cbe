"""The round-trip suite against a real daemon (TENPLEX_ADDR): every checkpoint of the catalogue
(state_catalogue.py: every torch optimizer and LR scheduler, GradScaler and RNG states, configs,
containers, scalars, empty, 0-d and strided tensors) saved by ``tenplex.save`` and loaded by
``tenplex.load`` comes back as ``torch.save``/``torch.load`` give it back, types and values bit for
bit (-0.0, NaN payloads); so does the state each saves after one resumed step. Refused states raise
``TypeError``/``ValueError`` naming the key before anything is written (the previous save still
loads); ``allow_pickle`` opts in on both sides. Every save and load takes the pass's way: through
shared memory (no fallback to REST, no tensor read over REST), or over REST with ``TENPLEX_SHM=0``.
Prints OK at the end; any failure raises."""

import io
import os
import pathlib
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import state_catalogue as cat  # noqa: E402
import tenplex  # noqa: E402

warnings.simplefilter("ignore")  # schedulers' deprecation warnings (step(epoch))
ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
JOB = "types-%d" % os.getpid()  # run twice by TenplexdIT (shared memory, REST)
WAY = "rest" if os.environ.get("TENPLEX_SHM", "1").lower() in ("0", "off", "false", "no") else "shared_memory"
ways = {"saves": 0, "loads": 0}


class Opaque:
    """A value the codec has no safe form for: saved only with allow_pickle=True."""

    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return type(other) is Opaque and other.x == self.x


def torch_round_trip(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)  # the test's own bytes; torch 2.6 defaults to True


def saved(state, step, **kw):
    """``tenplex.save``, checked to have gone the pass's way."""
    tenplex.save(state, job=JOB, step=step, rank=0, world=1, client=c, **kw)
    went = tenplex.last_saved()
    assert (went["step"], went["via"]) == (step, WAY), (WAY, went)
    ways["saves"] += 1


def loaded(**kw):
    """``tenplex.load``, checked to have gone the pass's way (through shared memory: every tensor)."""
    state, at = tenplex.load(job=JOB, rank=0, client=c, **kw)
    went = tenplex.last_loaded()
    assert went["via"] == WAY and (went["rest_tensors"] == 0) == (WAY == "shared_memory"), (WAY, went)
    ways["loads"] += 1
    return state, at


def save_load(state, step, **kw):
    saved(state, step, **{k: v for k, v in kw.items() if k == "allow_pickle"})
    got, at = loaded(**kw)
    assert at == step, (at, step)
    return got


def raises(kinds, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except kinds as e:
        return str(e)
    raise AssertionError("%s did not raise %s" % (fn.__name__, kinds))


# ---- every catalogue entry: saved, loaded, compared with torch.load's; then one resumed step of each
entries = cat.entries()
state = {e.name: e.state() for e in entries}
ref = {k: torch_round_trip(v) for k, v in state.items()}
got = save_load(state, 1)
for e in entries:
    cat.same(ref[e.name], got[e.name], "/%s/" % e.name)
resumable = [e for e in entries if e.resume is not None]
ref2 = {e.name: torch_round_trip(e.resume(ref[e.name])) for e in resumable}
got2 = save_load({e.name: e.resume(got[e.name]) for e in resumable}, 2)
for e in resumable:
    cat.same(ref2[e.name], got2[e.name], "/resumed %s/" % e.name)
print("round-tripped %d checkpoints and %d resumed steps" % (len(entries), len(resumable)))

# the issue's cases, spelt out
assert type(got["containers"]["state_dict"]) is type(ref["containers"]["state_dict"])
assert got["containers"]["state_dict"]._metadata == ref["containers"]["state_dict"]._metadata
assert isinstance(got["scheduler MultiStepLR"]["scheduler"]["milestones"], __import__("collections").Counter)
assert type(got["tensors"]["np_scalars"]["f32"]) is np.float32 and type(got["tensors"]["np_arrays"]["a"]) is np.ndarray
assert type(got["tensors"]["param"]) is torch.nn.Parameter and got["configs"]["hparams"]["dtype"] is torch.float32
assert got["configs"]["config"].out == pathlib.Path("/tmp/out") and got["configs"]["mode"] is cat.Mode.TRAIN
one_cycle = got["scheduler OneCycleLR"]["scheduler"]
if "anneal_func" in ref["scheduler OneCycleLR"]["scheduler"]:  # torch 1.13 keeps a bound method in its state
    anneal = one_cycle["anneal_func"]
    assert anneal.__func__ is torch.optim.lr_scheduler.OneCycleLR._annealing_cos and anneal(1.0, 0.0, 0.5) == 0.5
else:  # torch 2.x keeps the method's name
    assert one_cycle["_anneal_func_type"] == "cos", one_cycle

# ---- as_torch: None gives back what was saved; True every tensor as torch, False as numpy
mixed = {"np": np.arange(3.0), "t": torch.arange(3.0), "s": np.float64(2.0)}
saved(mixed, 3)
as_saved, _ = loaded()
assert (type(as_saved["np"]), type(as_saved["t"]), type(as_saved["s"])) == (np.ndarray, torch.Tensor, np.float64)
all_torch, _ = loaded(as_torch=True)
assert all(type(v) is torch.Tensor for v in all_torch.values()), all_torch
all_numpy, _ = loaded(as_torch=False)
assert all(isinstance(v, (np.ndarray, np.generic)) for v in all_numpy.values()), all_numpy

# ---- refusals: a TypeError or ValueError naming the key, before anything is written
m = torch.nn.Linear(2, 2)
cyclic = torch.optim.lr_scheduler.CyclicLR(torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), 0.01, 0.1)
refused = {
    "scheduler/_scale_fn_ref": {"scheduler": cyclic.state_dict()},  # a WeakMethod: torch.save refuses it too
    "x/sparse": {"x": {"sparse": torch.eye(3).to_sparse()}},
    "x/words": {"x": {"words": np.array(["a", "bc"])}},
    "x/objects": {"x": {"objects": np.array([{}, 1], dtype=object)}},
    "x/0": {"x": [lambda: 1]},
    "x/opaque": {"x": {"opaque": Opaque(1)}},
    "x/dd": {"x": {"dd": __import__("collections").defaultdict(lambda: 0)}},
    "x/gen": {"x": {"gen": np.random.default_rng(0)}},
}
if "_scale_fn_ref" not in cyclic.state_dict():  # torch 2.x leaves the WeakMethod out of the state: it saves
    del refused["scheduler/_scale_fn_ref"]
for key, bad in refused.items():
    msg = raises((TypeError, ValueError), tenplex.save, bad, job=JOB, step=4, rank=0, world=1, client=c)
    assert repr(key) in msg, (key, msg)
    assert "allow_pickle" in msg or key == "scheduler/_scale_fn_ref", msg
for bad_key in ({(1, 2): 0}, {0.5: 1}):
    assert "(a " in raises(ValueError, tenplex.save, {"k": bad_key}, job=JOB, step=4, rank=0, world=1, client=c)
still, at = loaded()
assert at == 3 and np.array_equal(still["np"], mixed["np"]), at  # the previous save still loads

# ---- allow_pickle: the explicit opt-in, on saving and on loading
opted = {"x": {"opaque": Opaque([1, 2]), "words": np.array(["a", "bc"]), "c64": torch.ones(2, dtype=torch.complex64)}}
saved(opted, 5, allow_pickle=True)
msg = raises(tenplex.TenplexError, tenplex.load, job=JOB, rank=0, client=c)
assert "allow_pickle=True" in msg and "'x/" in msg, msg
back, _ = loaded(allow_pickle=True)
cat.same(torch_round_trip(opted), back)

print("%d saves and %d loads went %s" % (ways["saves"], ways["loads"], WAY.replace("_", " ")))
print("OK")
