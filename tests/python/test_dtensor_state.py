"""DTensor states through tenplex.save / tenplex.load without a description, against a real daemon
(TENPLEX_ADDR), under torch 2.x, with real gloo processes:

* a state of DTensors (Shard(0), Shard(1), Replicate(); odd sizes that leave a rank an empty shard, a
  NaN with a payload, bf16, f64, i64), a plain tensor and plain values, saved on a mesh of (2,), loads
  on (4,), is saved there and loads on (1,); one saved on a 2-D mesh (2,2) (Shard(0)+Shard(1),
  Replicate+Shard, Shard(0) twice, Shard(1)+Replicate) loads on (1,4): each rank's local shard is bit for
  bit what DCP's own FileSystemWriter/FileSystemReader give for the same change, and the full tensors
  equal the saved values;
* a saved layout that is malformed, names ranks outside the generation or a rank twice, disagrees with
  the stored shard, with another rank's layout or with the caller's tensor is refused, naming the key,
  and the caller's DTensors keep their values; so is a plain or meta-device tensor of ``into`` where a
  DTensor's shard is stored; a DTensor that only another rank's tree holds (a pipeline stage's) loads;
  a DTensor saved as another rank than its mesh coordinate's, or with a Partial placement, is refused
  before anything is written;
* an FSDP2 model's and its Adam's state (``fully_shard``: uneven ``Shard(0)`` DTensors; DCP's
  ``get_state_dict``) saved at world 2 loads at world 3 as DCP loads it.

Prints OK at the end; any failure raises."""

import argparse
import datetime
import faulthandler
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402

import tenplex  # noqa: E402
from seeded_values import seeded  # noqa: E402
from tenplex import checkpoint  # noqa: E402
from tenplex.wire import tree_codec, type_tags  # noqa: E402

# a worker that hangs prints every thread's stack and exits after this long; the parent waits for each world
# a minute longer, so a hang shows where it was rather than only that it timed out
HANG_S = int(os.environ.get("TENPLEX_HANG_S", "300"))
faulthandler.dump_traceback_later(HANG_S, exit=True)

SHAPES = {"w": ((7, 5), torch.float32), "emb": ((3, 9), torch.float64), "b": ((5,), torch.bfloat16),
          "count": ((5, 3), torch.int64), "h": ((6,), torch.float16)}
ONE_D = {"w": "S0", "emb": "S1", "b": "R", "count": "S0"}
TWO_D = {"w": "S0,S1", "emb": "R,S0", "b": "S0,S0", "count": "S1,R"}


def global_values(step):
    return seeded(SHAPES, 2000 + step)


def placements(text):
    from torch.distributed.tensor import Replicate, Shard
    return [Replicate() if p == "R" else Shard(int(p[1:])) for p in text.split(",")]


def state_of(mesh_shape, values, step):
    """DTensors of ``values`` on a mesh of ``mesh_shape`` (``values`` None: zeros), with a plain tensor and values."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import distribute_tensor
    mesh = init_device_mesh("cpu", mesh_shape)
    layouts = ONE_D if len(mesh_shape) == 1 else TWO_D
    model = {}
    for name, (shape, dtype) in SHAPES.items():
        v = torch.zeros(shape, dtype=dtype) if values is None else values[name]
        model[name] = v.clone() if name not in layouts else distribute_tensor(v, mesh, placements(layouts[name]))
    return {"model": model, "step": step, "extra": {"lr": 0.5 * step, "names": ["a", "b%d" % step]}}


def bits(t):
    return t.detach().contiguous().view(-1).view(torch.uint8)


def local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def worker(a):
    dist.init_process_group("gloo", init_method="file://" + a.store, rank=a.rank, world_size=a.world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        mesh = tuple(int(n) for n in a.mesh.split("x"))
        if a.mode == "save":
            state = state_of(mesh, global_values(a.step), a.step)
            tenplex.save(state, job=a.job, step=a.step, rank=a.rank, world=a.world)
            dcp.save(state, storage_writer=dcp.FileSystemWriter(a.dir + "-%d" % a.step))
            return
        ours, theirs = state_of(mesh, None, -1), state_of(mesh, None, -1)
        got, step = tenplex.load(job=a.job, rank=a.rank, into=ours)
        assert step == a.step, (step, a.step)
        dcp.load(theirs, storage_reader=dcp.FileSystemReader(a.dir + "-%d" % a.step))
        made = a.values or a.step  # the step whose values the saved state holds
        want = global_values(made)
        for name in SHAPES:
            x, y = got["model"][name], theirs["model"][name]
            assert x is ours["model"][name] or name == "h", name  # loaded in place
            assert torch.equal(bits(local(x)), bits(local(y))), (name, mesh, a.rank)
            full = x.full_tensor() if hasattr(x, "full_tensor") else x
            assert torch.equal(bits(full), bits(want[name])), (name, mesh)
        assert got["step"] == theirs["step"] == made and got["extra"] == theirs["extra"], (got["extra"], theirs["extra"])
        info = tenplex.last_loaded()
        assert info["dtensors"] == len(ONE_D) and info["pieces"] >= 1, info  # an empty shard reads nothing
        assert info["via"] == ("rest" if os.environ.get("TENPLEX_SHM") == "0" else "shared_memory"), info
        if mesh == (1,):
            assert info["from_ranks"] == list(range(int(a.saved_world))), info  # every saved rank holds a part
        if a.then_save:  # the loaded state saved again on this mesh
            tenplex.save(got, job=a.job, step=a.then_save, rank=a.rank, world=a.world)
            dcp.save(got, storage_writer=dcp.FileSystemWriter(a.dir + "-%d" % a.then_save))
    finally:
        tenplex.end_process_group()


def fsdp_model(mesh_shape, seed, grads_seed):
    """A small model sharded by FSDP2 (``fully_shard``: every parameter a DTensor ``Shard(0)``, 7 and 3 rows
    over the mesh: uneven) and its Adam, stepped once with the gradients of ``grads_seed`` (set by hand:
    FSDP2's forward needs a device stream that the CPU lacks), and its state dicts (DCP's ``get_state_dict``)."""
    from torch.distributed.checkpoint.state_dict import get_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import distribute_tensor
    mesh = init_device_mesh("cpu", mesh_shape)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    for layer in (model[0], model[2], model):
        fully_shard(layer, mesh=mesh)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(grads_seed)
    for p in model.parameters():
        p.grad = distribute_tensor(torch.randn(p.shape, generator=g), mesh, p.placements)
    opt.step()
    m, o = get_state_dict(model, opt)
    return {"model": m, "optim": o}


def fsdp(a):
    """FSDP2 states: saved at world 2, loaded at 3 as DCP loads them."""
    dist.init_process_group("gloo", init_method="file://" + a.store, rank=a.rank, world_size=a.world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        if a.mode == "fsdp-save":
            state = fsdp_model((a.world,), 0, 5)
            tenplex.save(state, job=a.job, step=a.step, rank=a.rank, world=a.world)
            dcp.save(state, storage_writer=dcp.FileSystemWriter(a.dir + "-%d" % a.step))
            return
        ours, theirs = fsdp_model((a.world,), 1, 6), fsdp_model((a.world,), 1, 6)
        got, _ = tenplex.load(job=a.job, rank=a.rank, into=ours)
        dcp.load(theirs, storage_reader=dcp.FileSystemReader(a.dir + "-%d" % a.step))
        pairs = [(k, got["model"][k], theirs["model"][k]) for k in theirs["model"]]
        for fqn, st in theirs["optim"]["state"].items():
            pairs += [("%s.%s" % (fqn, k), got["optim"]["state"][fqn][k], v) for k, v in st.items()]
        for name, x, y in pairs:
            assert type(x) is type(y) and torch.equal(bits(local(x)), bits(local(y))), (name, a.rank)
        assert got["optim"]["param_groups"] == theirs["optim"]["param_groups"]
        assert len(pairs) == 4 * 4, len(pairs)  # 4 parameters; step, exp_avg, exp_avg_sq of each
    finally:
        tenplex.end_process_group()


def refused(call, words):
    try:
        call()
    except Exception as e:  # noqa: BLE001
        assert words in str(e), (words, str(e)[-600:])
        return
    raise AssertionError("not refused: expected %r" % words)


def hostile(a):
    """One process: forged layouts in saved trees are refused and change nothing; so are unsavable DTensors."""
    from torch.distributed.tensor import Partial
    dist.init_process_group("gloo", init_method="file://" + a.store, rank=0, world_size=1)
    try:
        c = tenplex.Client(os.environ["TENPLEX_ADDR"])
        good = state_of((1,), global_values(1), 1)
        entries = tree_codec.flatten(good)
        meta = next(p for rel, kind, p in entries if rel == "model/dir.meta")
        cases = [({"mesh": [1 << 21]}, "mesh is not"), ({"ranks": [5]}, "ranks is not a list"),
                 ({"placements": ["S7"]}, "placements"), ({"coord": [3]}, "coordinate"),
                 ({"shape": [7, 6]}, "in the checkpoint"), ({"mesh": [2], "coord": [1], "ranks": [0, 0]}, "name a rank twice"),
                 ({"t": "DTensor", "shape": "x"}, "malformed")]
        for step, (change, words) in enumerate(cases, start=10):
            lines = meta.decode().split("\n")
            i = lines.index("types") + 1
            tags = json.loads(lines[i])
            tags["w"].update(change)
            lines[i] = json.dumps(tags)
            bad = [(rel, kind, (("\n".join(lines)).encode() if rel == "model/dir.meta" else p)) for rel, kind, p in entries]
            bad = [(rel, kind, local(p)) for rel, kind, p in bad]
            job = "dt-forged-%d-%d" % (os.getpid(), step)
            checkpoint._copy_state(c, job, 0, step, bad, checkpoint.seal_body(1), None, True)[1]()
            into = state_of((1,), None, -1)
            refused(lambda: tenplex.load(job=job, rank=0, into=into), words)
            assert all(not local(t).any() for t in into["model"].values()), change  # nothing changed
            c.request("DELETE", "/api/v1/dirs/job/%s" % job, ok=(200, 404), params={"recursive": "true"})
        refused(lambda: tenplex.save(good, job="dt-wrong-rank-%d" % os.getpid(), step=1, rank=1, world=2),
                "its device mesh places this process at rank 0")
        from torch.distributed.tensor import DTensor
        partial = DTensor.from_local(torch.ones(2), good["model"]["w"].device_mesh, [Partial()])
        refused(lambda: tenplex.save({"p": partial}, job="dt-partial-%d" % os.getpid(), step=1, rank=0, world=1),
                "Partial")
        refused(lambda: tenplex.load(job="dt-forged-none-%d" % os.getpid(), rank=0, into=state_of((1,), None, -1)),
                "is not known")
        saved = "dt-plain-%d" % os.getpid()
        tenplex.save(good, job=saved, step=1, rank=0, world=1)
        refused(lambda: tenplex.load(job=saved, rank=0), "load it into a DTensor")
        two_rank_trees(c, good["model"]["w"].device_mesh)
    finally:
        tenplex.end_process_group()


def forge(c, job, trees):
    """A generation of ``len(trees)`` ranks written by this process: rank r holds ``{"model": leaves}``,
    ``leaves``: name -> (tensor, its recorded tag or None)."""
    for r, leaves in trees.items():
        tags = {n: t for n, (v, t) in leaves.items() if t}
        entries = [("model/dir.meta", "file", "\n".join(["dict", str(len(leaves))] + type_tags.meta_lines(tags)).encode())]
        entries += [("model/%s.numpy.ndarray" % n, "tensor", v) for n, (v, t) in leaves.items()]
        checkpoint._copy_state(c, job, r, 1, entries, checkpoint.seal_body(len(trees)), None, True)[1]()


def tag(coord, ranks=None, mesh=(2,), shape=(8, 4)):
    t = {"t": "DTensor", "shape": list(shape), "mesh": list(mesh), "placements": ["S0"] * len(mesh),
         "coord": list(coord), "device": "cpu"}
    return t if ranks is None else dict(t, ranks=ranks)


def two_rank_trees(c, mesh):
    """Generations of two ranks whose layouts disagree with each other or with what they store are refused
    (and change nothing); a plain or meta-device tensor of into where a DTensor's shard is stored is refused;
    a DTensor that only another rank's tree holds (a pipeline stage's) loads from it."""
    from torch.distributed.tensor import Shard, distribute_tensor
    w = torch.arange(32, dtype=torch.float32).reshape(8, 4)
    into = lambda: {"model": {"w": distribute_tensor(torch.zeros(8, 4), mesh, [Shard(0)])}}  # noqa: E731
    cases = [({0: (w[:4], tag([0])), 1: (w[4:], tag([1]))}, None),
             ({0: (w[:4], tag([1], ranks=[1, 0])), 1: (w[4:], tag([1]))}, "record different layouts"),
             ({0: (w[:4], tag([0])), 1: (w[4:], tag([0]))}, "records itself at mesh coordinate"),
             ({0: (w, tag([0])), 1: (w[4:], tag([1]))}, "gives rank 0 the box"),
             ({0: (w[:4], tag([0])), 1: (w[4:].double(), tag([1]))}, "rank stored")]
    for i, (trees, words) in enumerate(cases):
        job = "dt-two-%d-%d" % (os.getpid(), i)
        forge(c, job, {r: {"w": leaf} for r, leaf in trees.items()})
        x = into()
        if words is None:
            tenplex.load(job=job, rank=0, into=x)
            assert torch.equal(local(x["model"]["w"]), w)
            refused(lambda: tenplex.load(job=job, rank=0, into={"model": {"w": torch.zeros(4, 4)}}),
                    "saved as a shard of a DTensor")
            meta = distribute_tensor(torch.empty(8, 4, device="meta"), mesh, [Shard(0)])
            refused(lambda: tenplex.load(job=job, rank=0, into={"model": {"w": meta}}), "meta device")
            continue
        refused(lambda: tenplex.load(job=job, rank=0, into=x), words)
        assert not local(x["model"]["w"]).any(), words
    job = "dt-stages-%d" % os.getpid()
    forge(c, job, {0: {"l0": (w, tag([0], [0], (1,)))}, 1: {"l1": (w + 100, tag([0], [1], (1,)))}})
    x = {"model": {n: distribute_tensor(torch.zeros(8, 4), mesh, [Shard(0)]) for n in ("l0", "l1")}}
    got, _ = tenplex.load(job=job, rank=0, into=x)
    assert torch.equal(local(x["model"]["l0"]), w) and torch.equal(local(x["model"]["l1"]), w + 100)
    assert got["model"]["l1"] is x["model"]["l1"], sorted(got["model"])


def run_world(mode, world, mesh, job, step, tmp, saved_world=0, then_save=0, values=0):
    store = tempfile.mktemp(dir=tmp, prefix="store-")
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", mode, "--rank", str(r), "--world", str(world),
                               "--mesh", mesh, "--store", store, "--job", job, "--step", str(step),
                               "--dir", os.path.join(tmp, "fs"), "--saved-world", str(saved_world),
                               "--then-save", str(then_save), "--values", str(values)]) for r in range(world)]
    started = time.monotonic()
    try:
        codes = [p.wait(timeout=max(1.0, HANG_S + 60 - (time.monotonic() - started))) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    print("%s world %d (mesh %s): %.1f s" % (mode, world, mesh, time.monotonic() - started), file=sys.stderr)
    assert codes == [0] * world, (mode, world, mesh, codes)


def main():
    faulthandler.cancel_dump_traceback_later()  # the parent's time is the sum of its worlds': each has its own
    tmp = tempfile.mkdtemp(prefix="tenplex-dtensor-")
    try:
        job = "dtensor-%d" % os.getpid()
        run_world("save", 2, "2", job, 10, tmp)
        run_world("load", 4, "4", job, 10, tmp, saved_world=2, then_save=20)
        run_world("load", 1, "1", job, 20, tmp, saved_world=4, values=10)
        two = job + "-2d"
        run_world("save", 4, "2x2", two, 30, tmp)
        run_world("load", 4, "1x4", two, 30, tmp, saved_world=4)
        run_world("fsdp-save", 2, "2", job + "-fsdp", 40, tmp)
        run_world("fsdp-load", 3, "3", job + "-fsdp", 40, tmp)
        run_world("hostile", 1, "1", job, 0, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("OK")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    for name, kind in (("--worker", str), ("--rank", int), ("--world", int), ("--mesh", str), ("--store", str),
                       ("--job", str), ("--step", int), ("--dir", str), ("--saved-world", int), ("--then-save", int), ("--values", int)):
        p.add_argument(name, type=kind)
    a = p.parse_args()
    if a.worker == "hostile":
        hostile(a)
    elif a.worker.startswith("fsdp") if a.worker else False:
        a.mode = a.worker
        fsdp(a)
    elif a.worker:
        a.mode = a.worker
        worker(a)
    else:
        main()
