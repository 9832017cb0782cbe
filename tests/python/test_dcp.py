"""torch.distributed.checkpoint through tenplex.dcp against a real daemon (TENPLEX_ADDR), under torch 2.x.

* DTensor states (Shard(0), Shard(1), Replicate(), a plain tensor, non-tensor values; odd sizes, a NaN
  with a payload, bf16 and f16) saved at world 2 by real gloo processes load at worlds 1, 2 and 4 bit for
  bit as DCP's own FileSystemWriter/FileSystemReader give them, and equal to the saved values;
* with a second daemon (TENPLEX_ADDR2), ranks saved on two daemons load at world 3 from both;
* ``dcp.async_save`` through the same writer loads the same way;
* a save whose coordinator fails before its metadata is written never completes: the previous
  generation is the one that loads;
* what a hostile or careless tree holds is tests/python/test_dcp_hostile.py's.

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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402

import tenplex  # noqa: E402
from seeded_values import seeded  # noqa: E402
import tenplex.dcp  # noqa: E402

faulthandler.dump_traceback_later(int(os.environ.get("TENPLEX_HANG_S", "300")), exit=True)

SHAPES = {"w": ((7, 5), torch.float32, "shard0"), "emb": ((3, 9), torch.float64, "shard1"),
          "b": ((5,), torch.bfloat16, "replicate"), "count": ((5, 3), torch.int64, "shard0"),
          "h": ((6,), torch.float16, "plain")}


def global_values(step):
    return seeded({n: (s, d) for n, (s, d, _) in SHAPES.items()}, 1000 + step)


def state_at(step, zero=False):
    """The state the ranks of the current group hold (DTensors on a mesh of the whole group)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    place = {"shard0": [Shard(0)], "shard1": [Shard(1)], "replicate": [Replicate()]}
    model = {}
    for name, value in global_values(step).items():
        value = torch.zeros_like(value) if zero else value
        kind = SHAPES[name][2]
        model[name] = value.clone() if kind == "plain" else distribute_tensor(value, mesh, place[kind])
    return {"model": model, "step": -1 if zero else step,
            "extra": {"lr": 0.0 if zero else 0.5 * step, "names": [] if zero else ["a", "b%d" % step]}}


def bits(t):
    return t.detach().contiguous().view(-1).view(torch.uint8)


def local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def _tensors(obj):
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    return [obj] if isinstance(obj, torch.Tensor) else []


def _daemon_of(rank):
    """The daemon a saving rank writes to: with TENPLEX_DAEMONS (two daemons), rank r's is r's worker's."""
    daemons = json.loads(os.environ.get("TENPLEX_DAEMONS", "{}"))
    return daemons.get(str(rank % max(1, len(daemons))), os.environ["TENPLEX_ADDR"])


def worker(args):
    dist.init_process_group("gloo", init_method="file://" + args.store, rank=args.rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        if args.mode == "async":
            writer, state = tenplex.dcp.Writer(job=args.job, step=args.step), state_at(args.step)
            pending = dcp.async_save(state, storage_writer=writer)
            for t in _tensors(state):  # training goes on at once: the save holds its own copy
                local(t).fill_(7)
            pending.result()
            shm = os.environ.get("TENPLEX_SHM") != "0"
            assert writer.staged_via == ("shared_memory" if shm else "host"), writer.staged_via
            dcp.save(state_at(args.step), storage_writer=dcp.FileSystemWriter(args.dir))
        elif args.mode in ("save", "fail"):
            writer = tenplex.dcp.Writer(job=args.job, step=args.step, addr=_daemon_of(args.rank))
            if args.mode == "fail":
                writer = FailingWriter(job=args.job, step=args.step)
            try:
                dcp.save(state_at(args.step), storage_writer=writer)
            except Exception:  # noqa: BLE001 (the failure this mode injects)
                if args.mode != "fail":
                    raise
            if args.mode == "save":
                dcp.save(state_at(args.step), storage_writer=dcp.FileSystemWriter(args.dir))
        else:
            ours, theirs = state_at(args.step, zero=True), state_at(args.step, zero=True)
            dcp.load(ours, storage_reader=tenplex.dcp.Reader(job=args.job))
            dcp.load(theirs, storage_reader=dcp.FileSystemReader(args.dir))
            want = global_values(args.step)
            for name in SHAPES:
                a, b = ours["model"][name], theirs["model"][name]
                assert torch.equal(bits(local(a)), bits(local(b))), (name, args.world, args.rank)
                full = a.full_tensor() if hasattr(a, "full_tensor") else a
                assert torch.equal(bits(full), bits(want[name])), (name, args.world)
            assert ours["step"] == theirs["step"] == args.step, (ours["step"], theirs["step"])
            assert ours["extra"] == theirs["extra"] == {"lr": 0.5 * args.step, "names": ["a", "b%d" % args.step]}
    finally:
        tenplex.end_process_group()


class FailingWriter(tenplex.dcp.Writer):
    """A coordinator that fails after every rank wrote, before the metadata: the fault at the end of a save."""

    def finish(self, metadata, results):
        raise RuntimeError("injected: the coordinator fails before writing the metadata")


def run_world(mode, world, job, step, tmp):
    store = tempfile.mktemp(dir=tmp, prefix="store-")
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", mode, "--rank", str(r), "--world", str(world),
                               "--store", store, "--job", job, "--step", str(step), "--dir", os.path.join(tmp, "fs-%d" % step)])
             for r in range(world)]
    codes = [p.wait(timeout=240) for p in procs]
    assert codes == [0] * world, (mode, world, codes)


def main():
    tmp = tempfile.mkdtemp(prefix="tenplex-dcp-")
    try:
        job = "dcp-%d" % os.getpid()
        run_world("save", 2, job, 10, tmp)
        assert tenplex.stop.generations(job)["current"] == 10
        for world in (1, 2, 4):
            run_world("load", world, job, 10, tmp)
        run_world("fail", 2, job, 20, tmp)
        gens = tenplex.stop.generations(job)
        assert gens["current"] == 10, gens
        assert [g["complete"] for g in gens["generations"] if g["step"] == 20] == [False], gens
        run_world("load", 2, job, 10, tmp)  # the previous generation loads
        run_world("async", 2, job, 30, tmp)
        run_world("load", 4, job, 30, tmp)
        second = os.environ.get("TENPLEX_ADDR2")
        if second:  # ranks saved on two daemons load from both, at another world size
            hosts = [a.split("://")[-1] for a in (os.environ["TENPLEX_ADDR"], second)]  # host:port, as launchers give them
            os.environ["TENPLEX_DAEMONS"] = json.dumps({"0": hosts[0], "1": hosts[1]})
            two = job + "-two"
            run_world("save", 2, two, 40, tmp)
            for addr in (os.environ["TENPLEX_ADDR"], second):
                assert tenplex.stop.generations(two, tenplex.Client(addr))["current"] == 40
            assert tenplex.stop.generations(two, tenplex.Client(second))["generations"][0]["localRanks"] == [1]
            run_world("load", 3, two, 40, tmp)
            del os.environ["TENPLEX_DAEMONS"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("OK")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--worker")
    p.add_argument("--rank", type=int)
    p.add_argument("--world", type=int)
    p.add_argument("--store")
    p.add_argument("--job")
    p.add_argument("--step", type=int)
    p.add_argument("--dir")
    a = p.parse_args()
    if a.worker:
        a.mode = a.worker
        worker(a)
    else:
        main()
