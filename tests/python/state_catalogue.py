"""A catalogue of the checkpoints training code writes every day, for the round-trip suite
(test_state_types.py): every optimizer and LR scheduler of ``torch.optim``, a GradScaler's state,
RNG states, configs (``argparse.Namespace``, dataclasses), containers of every kind the codec keeps,
numpy and torch scalars, empty, 0-d, non-contiguous and strided tensors. Each entry can be rebuilt
from its saved state and stepped once (``resume``), so that a resumed step is compared too.

:func:`same` compares two states as ``torch.load``'s and ``tenplex.load``'s results must agree:
the same types at every place (containers, leaves, tensor classes, dtypes) and the same values:
tensors, arrays and floats bit for bit (raw bytes: -0.0 is not +0.0, NaNs differ by payload)."""

import argparse
import collections
import dataclasses
import enum
import io
import pathlib
import random
import struct

import numpy as np
import torch


class Mode(enum.Enum):
    TRAIN = "train"
    EVAL = "eval"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Optim:
    lr: float = 1e-3
    betas: tuple = (0.9, 0.999)


@dataclasses.dataclass
class Config:
    name: str = "run"
    out: pathlib.Path = pathlib.Path("/tmp/out")
    dtype: torch.dtype = torch.bfloat16
    mode: Mode = Mode.TRAIN
    tags: frozenset = frozenset({"a", "b"})
    optim: Optim = dataclasses.field(default_factory=Optim)


Point = collections.namedtuple("Point", ["x", "y"])


def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _train(model, opt, steps=2, seed=1):
    torch.manual_seed(seed)
    for _ in range(steps):
        def closure():
            opt.zero_grad()
            loss = model(torch.randn(16, 4)).pow(2).mean()
            loss.backward()
            return loss
        opt.step(closure)


OPTIMIZERS = {
    "Adam": lambda p: torch.optim.Adam(p, lr=1e-2, amsgrad=True),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=1e-2),
    "SGD": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "Adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
    "Adadelta": lambda p: torch.optim.Adadelta(p),
    "Adamax": lambda p: torch.optim.Adamax(p),
    "ASGD": lambda p: torch.optim.ASGD(p),
    "LBFGS": lambda p: torch.optim.LBFGS(p, history_size=3, max_iter=3),
    "NAdam": lambda p: torch.optim.NAdam(p),
    "RAdam": lambda p: torch.optim.RAdam(p),
    "RMSprop": lambda p: torch.optim.RMSprop(p, momentum=0.5, centered=True),
    "Rprop": lambda p: torch.optim.Rprop(p),
}


def _sparse_adam():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 4, sparse=True)
    opt = torch.optim.SparseAdam(emb.parameters())
    for i in range(2):
        opt.zero_grad()
        emb(torch.tensor([i, 3])).sum().backward()
        opt.step()
    return emb, opt


def _sched(name, opt):
    s = torch.optim.lr_scheduler
    return {
        "LambdaLR": lambda: s.LambdaLR(opt, lambda e: 0.9 ** e),
        "MultiplicativeLR": lambda: s.MultiplicativeLR(opt, lambda e: 0.95),
        "StepLR": lambda: s.StepLR(opt, 2, 0.5),
        "MultiStepLR": lambda: s.MultiStepLR(opt, [1, 3, 5], 0.5),
        "ConstantLR": lambda: s.ConstantLR(opt, 0.5, 3),
        "LinearLR": lambda: s.LinearLR(opt, 0.25, 1.0, 4),
        "ExponentialLR": lambda: s.ExponentialLR(opt, 0.9),
        "SequentialLR": lambda: s.SequentialLR(opt, [s.ConstantLR(opt, 0.5, 2), s.ExponentialLR(opt, 0.9)], [2]),
        "CosineAnnealingLR": lambda: s.CosineAnnealingLR(opt, 10),
        "ChainedScheduler": lambda: s.ChainedScheduler([s.ConstantLR(opt, 0.5, 2), s.ExponentialLR(opt, 0.9)]),
        "ReduceLROnPlateau": lambda: s.ReduceLROnPlateau(opt, patience=0),
        "CyclicLR": lambda: s.CyclicLR(opt, 0.01, 0.1, step_size_up=2),
        "OneCycleLR": lambda: s.OneCycleLR(opt, max_lr=0.5, total_steps=20),
        "CosineAnnealingWarmRestarts": lambda: s.CosineAnnealingWarmRestarts(opt, 3),
        "PolynomialLR": lambda: s.PolynomialLR(opt, 8, 2.0),
    }[name]()


# CyclicLR's state dict holds a WeakMethod that torch.save (1.13) cannot pickle either: refused, see
# test_state_types.py; it is in the catalogue where torch can save it.
SCHEDULERS = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
              "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau", "OneCycleLR",
              "CosineAnnealingWarmRestarts", "PolynomialLR"]


def _sched_step(sched, name, epoch=None):
    if name == "ReduceLROnPlateau":
        sched.step(1.0)
    elif epoch is not None and name == "MultiStepLR":
        sched.step(epoch)  # the closed form: needs the milestones' Counter
    else:
        sched.step()


class Entry:
    """One checkpoint: ``state()`` gives it; ``resume(state)`` rebuilds the training objects from a
    loaded state, takes one step and returns the state to save again (``None``: nothing to resume)."""

    def __init__(self, name, state, resume=None):
        self.name, self.state, self.resume = name, state, resume


def _optimizer_entry(name):
    def build():
        if name == "SparseAdam":
            return _sparse_adam()
        model = _model()
        opt = OPTIMIZERS[name](model.parameters())
        _train(model, opt)
        return model, opt

    def state():
        model, opt = build()
        return {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "step": 20,
                "best_acc": 0.875}

    def resume(st):
        model, opt = build()
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        if name == "SparseAdam":
            opt.zero_grad()
            model(torch.tensor([1, 2])).sum().backward()
            opt.step()
        else:
            _train(model, opt, steps=1, seed=7)
        return {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": st["epoch"] + 1,
                "step": st["step"] + 1, "best_acc": st["best_acc"]}
    return Entry("optimizer " + name, state, resume)


def _scheduler_entry(name):
    def build():
        model = _model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = _sched(name, opt)
        return model, opt, sched

    def state():
        model, opt, sched = build()
        for _ in range(3):
            opt.step()
            _sched_step(sched, name)
        return {"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}

    def resume(st):
        model, opt, sched = build()
        opt.load_state_dict(st["optimizer"])
        sched.load_state_dict(st["scheduler"])
        opt.step()
        _sched_step(sched, name, epoch=4)
        return {"optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "lr": [g["lr"] for g in opt.param_groups]}
    return Entry("scheduler " + name, state, resume)


def _rng_entry():
    def state():
        random.seed(3)
        np.random.seed(3)
        torch.manual_seed(3)
        return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                "generator": np.random.default_rng(5).bit_generator.state, "python": random.getstate()}

    def resume(st):
        torch.set_rng_state(st["torch"])
        np.random.set_state(st["numpy"])
        random.setstate(st["python"])
        g = np.random.default_rng()
        g.bit_generator.state = st["generator"]
        draws = {"torch": torch.rand(3), "numpy": np.random.rand(3), "generator": g.random(3),
                 "python": random.random()}
        return {"draws": draws, "torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                "generator": g.bit_generator.state, "python": random.getstate()}
    return Entry("rng states", state, resume)


def _configs():
    ns = argparse.Namespace(lr=0.1, path=pathlib.Path("/data"), dtype=torch.float16, layers={1, 2}, mode=Mode.EVAL)
    return {"args": ns, "config": Config(), "optim": Optim(lr=0.5), "mode": Mode.TRAIN, "level": Level.HIGH,
            "hparams": {"root": pathlib.Path("/data/x"), "pure": pathlib.PurePosixPath("a/b"),
                        "dtype": torch.float32, "np_dtype": np.dtype("float16"), "device": torch.device("cpu"),
                        "ids": {3, 1, 2}, "frozen": frozenset({"x"}), "shape": (4, 5), "c": 1 + 2j,
                        "raw": bytearray(b"\x00\x01"), "size": torch.Size([2, 3]), "point": Point(1, 2.5)}}


def _containers():
    od = collections.OrderedDict([("b", 1), ("a", torch.ones(2))])
    sd = _model().state_dict()  # an OrderedDict with _metadata
    return {"ordered": od, "state_dict": sd, "counter": collections.Counter({"x": 3, 4: 1}),
            "defaultdict": collections.defaultdict(list, {"k": [1, 2]}), "dd_none": collections.defaultdict(None),
            "empty": {"dict": {}, "list": [], "tuple": (), "set": set(), "ordered": collections.OrderedDict()},
            "int_keys": {0: {"step": torch.tensor(3.0)}, 7: np.float32(0.5)},
            "nested": [({"a": (1, [2, {"b": None}])},), {"deep": [[[]]]}],
            "plain": {"t": True, "f": False, "i": -(2 ** 70), "x": float("nan"), "inf": float("-inf"), "s": "é\nz",
                      "b": b"\xff", "none": None}}


def _tensors():
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    return {"np_scalars": {"f32": np.float32(1.25), "f64": np.float64(-0.1), "i64": np.int64(7), "b": np.bool_(True),
                           "u8": np.uint8(200), "u16": np.uint16(9)},
            "np_arrays": {"a": np.arange(6, dtype=np.int32).reshape(2, 3), "zero_d": np.array(2.5),
                          "empty": np.zeros((0, 3), np.float32), "view": np.arange(12.0).reshape(3, 4)[:, ::2]},
            "torch_scalars": {"f": torch.tensor(1.5), "i": torch.tensor(3),
                              "bf16": torch.tensor(2.0, dtype=torch.bfloat16), "b": torch.tensor(True)},
            "empty": torch.zeros(0, 3), "zero_d": torch.tensor(-0.0), "transposed": base.T, "strided": base[::2, 1::3],
            "expanded": torch.ones(3, 1).expand(3, 4), "half": torch.randn(3, dtype=torch.float16),
            "param": torch.nn.Parameter(torch.ones(2)),
            "frozen_param": torch.nn.Parameter(torch.ones(2), requires_grad=False),
            "grad": torch.ones(2, requires_grad=True), "ints": torch.arange(5, dtype=torch.int16)}


_INTS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
         torch.float64: torch.int64}


def _bits(patterns, dtype):
    """A tensor of ``dtype`` whose elements have the given bit patterns (unsigned hex)."""
    n = torch.finfo(dtype).bits
    return torch.tensor([p - (1 << n) if p >> (n - 1) else p for p in patterns], dtype=_INTS[dtype]).view(dtype)


def _float_bits():
    """Values that only a bitwise comparison tells apart: -0.0 beside +0.0, NaNs with distinct
    payloads and signs (quiet and signalling), infinities and a subnormal, in every float width."""
    f32 = _bits([0x0, 0x80000000, 0x7FC00000, 0x7FC00001, 0x7FC0BEEF, 0xFFC00003, 0x7F800001, 0xFF800000, 0x1],
                torch.float32)
    f64 = _bits([0x0, 0x8000000000000000, 0x7FF8000000000000, 0x7FF800000000ABCD, 0xFFF8000000000007,
                 0x7FF0000000000001], torch.float64)
    f16 = _bits([0x0, 0x8000, 0x7E00, 0x7E01, 0xFE02, 0x7C01], torch.float16)
    bf16 = _bits([0x0, 0x8000, 0x7FC0, 0x7FC1, 0xFFC2, 0x7F81], torch.bfloat16)
    return {"f32": f32, "f64": f64, "f16": f16, "bf16": bf16, "f32_strided": f32[1::2],
            "c64": torch.complex(f32[:4], f32[4:8]), "np_f32": f32.numpy().copy(), "np_f64": f64.numpy()[::-1].copy(),
            "np_neg_zero": np.float64(-0.0), "np_nan": f64.numpy()[3], "neg_zero": -0.0}


def _torch_saves(name):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    try:
        torch.save(_sched(name, opt).state_dict(), io.BytesIO())
        return True
    except TypeError:
        return False


def entries():
    out = [_optimizer_entry(n) for n in list(OPTIMIZERS) + ["SparseAdam"]]
    out += [_scheduler_entry(n) for n in SCHEDULERS + ["CyclicLR"] if n in SCHEDULERS or _torch_saves(n)]
    out.append(_rng_entry())
    out.append(Entry("grad scaler", lambda: {"scaler": {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                                          "growth_interval": 2000, "_growth_tracker": 0}}))
    out.append(Entry("configs", _configs))
    out.append(Entry("containers", _containers))
    out.append(Entry("tensors", _tensors))
    out.append(Entry("float bits", _float_bits))
    return out


# ---------------------------------------------------------------- comparison


def tensor_bytes(t):
    """A tensor's elements as raw bytes, in order (numpy has no bf16: its bits as int16)."""
    t = t.detach().cpu().contiguous()
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()


def same(a, b, path="/", ordered=True):
    """Raises ``AssertionError`` naming the first place where ``a`` and ``b`` differ in type or value
    (with ``ordered=False``, a plain dict's keys may come in another order)."""
    assert type(a) is type(b), "%s: %s vs %s" % (path, type(a).__name__, type(b).__name__)
    if isinstance(a, torch.Tensor):
        assert (a.dtype, a.shape, a.requires_grad) == (b.dtype, b.shape, b.requires_grad), \
            "%s: %s%s grad=%s vs %s%s grad=%s" % (path, a.dtype, list(a.shape), a.requires_grad, b.dtype,
                                                  list(b.shape), b.requires_grad)
        assert tensor_bytes(a) == tensor_bytes(b), "%s: %s vs %s" % (path, a, b)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b), "%s: %s vs %s" % (path, a.dtype, b.dtype)
        if a.dtype.kind == "O":
            assert np.array_equal(a, b), path
        else:
            assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), "%s: %r vs %r" % (path, a, b)
    elif isinstance(a, dict):
        if ordered or type(a) is not dict:
            assert list(a) == list(b), "%s: keys %s vs %s" % (path, list(a), list(b))
        else:
            assert sorted(map(str, a)) == sorted(map(str, b)), "%s: keys %s vs %s" % (path, list(a), list(b))
        assert getattr(a, "_metadata", None) == getattr(b, "_metadata", None), path + ": _metadata"
        assert getattr(a, "default_factory", None) == getattr(b, "default_factory", None), path + ": default_factory"
        for k in a:
            same(a[k], b[k], "%s%s/" % (path, k), ordered)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), "%s: %d vs %d items" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s%d/" % (path, i), ordered)
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b), "%s: %r vs %r" % (path, a, b)
    elif isinstance(a, argparse.Namespace) or dataclasses.is_dataclass(a):
        same(vars(a), vars(b), path, ordered)
    elif callable(a) and hasattr(a, "__func__"):
        assert a.__func__ is b.__func__ and type(a.__self__) is type(b.__self__), path
    else:
        assert a == b, "%s: %r vs %r" % (path, a, b)
