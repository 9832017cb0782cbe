"""Check 4: a small model sharded with DTensor (``DeviceMesh``, colwise and rowwise parallel, two gloo
processes on the CPU: one GPU cannot host two NCCL ranks) and its Adam state, described by
``tenplex.describe``, saved by both ranks, reconfigured by the daemon from T=2 to T=1, and loaded:
every tensor equals the DTensor's ``full_tensor()`` bit for bit and the same model trained unsharded
within float tolerance."""

import copy
import json
import os
import tempfile
from urllib.parse import urlparse

from checkutil import Skip, arguments, exit_with, main


def config(tp):
    return {"tp": tp, "pp": 1, "dp": 1, "devices": [[0, i] for i in range(tp)]}


def local(x):
    """The tree with every DTensor replaced by its local shard."""
    if isinstance(x, dict):
        return {k: local(v) for k, v in x.items()}
    if isinstance(x, list):
        return [local(v) for v in x]
    return x.to_local() if hasattr(x, "to_local") else x


def worker(rank, addr, job, tmp):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    import tenplex
    torch.manual_seed(0)
    dist.init_process_group("gloo", store=dist.FileStore(os.path.join(tmp, "store"), 2), rank=rank, world_size=2)
    try:
        mesh = init_device_mesh("cpu", (2,))
        model = torch.nn.Sequential()
        model.add_module("fc1", torch.nn.Linear(16, 32))
        model.add_module("act", torch.nn.GELU())
        model.add_module("fc2", torch.nn.Linear(32, 12))
        full = copy.deepcopy(model)
        parallelize_module(model, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, foreach=False)
        opt_full = torch.optim.Adam(full.parameters(), lr=1e-2, foreach=False)
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(3))
        for m, o in ((model, opt), (full, opt_full)):
            out = m(x)
            out = out.full_tensor() if hasattr(out, "full_tensor") else out
            (out ** 2).sum().backward()
            o.step()
        spec = tenplex.describe(model, optimizer=opt)
        named = dict(model.named_parameters())
        by_name = tenplex.optimizer_state_by_name(opt, named)
        fulls = {"model": {n: p.full_tensor().detach() for n, p in named.items()},
                 "exp_avg": {n: v.full_tensor() for n, v in by_name["exp_avg"].items()}}
        state = {"model": {n: p.detach().to_local() for n, p in named.items()}, "optimizer": local(by_name)}
        c = tenplex.Client(addr)
        u = urlparse(addr)
        os.environ["TENPLEX_DAEMONS"] = json.dumps({"0": "%s:%d" % (u.hostname, u.port)})
        tenplex.save(state, job=job, step=1, rank=rank, world=2, config=config(2), client=c, spec=spec)
        dist.barrier()
        if rank == 0:
            body = {"to": config(1), "daemons": {"0": "%s:%d" % (u.hostname, u.port)}}
            r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % job, ok=(202,), json=body).json()
            st = c.request("GET", r["status"] + "?wait=true").json()
            assert st["state"] == "committed", st
            loaded, step = tenplex.load(job=job, rank=0, client=c)
            assert step == 1, step
            checked, worst = 0, 0.0
            ref = dict(full.named_parameters())
            for n, want in fulls["model"].items():
                got = loaded["model"][n]
                assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape), (n, got.shape, want.shape)
                assert torch.equal(got, want), "%s: the reconfigured tensor differs from full_tensor()" % n
                d = float((got - ref[n].detach()).abs().max())
                worst = max(worst, d)
                assert d <= 1e-5, "%s differs from the unsharded model by %g" % (n, d)
                checked += 1
            for n, want in fulls["exp_avg"].items():
                assert torch.equal(loaded["optimizer"]["exp_avg"][n], want), "exp_avg of %s differs" % n
                checked += 1
            with open(os.path.join(tmp, "result.json"), "w") as f:
                json.dump({"checked": checked, "worst_vs_unsharded": worst,
                           "placements": {n: str(p.placements) for n, p in named.items()}}, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run(a):
    import torch
    try:
        from torch.distributed.device_mesh import init_device_mesh  # noqa: F401
        from torch.distributed.tensor import DTensor  # noqa: F401
        from torch.distributed.tensor.parallel import parallelize_module  # noqa: F401
    except ImportError as e:
        raise Skip("torch %s has no public DTensor (torch.distributed.tensor, 2.4+): %s" % (torch.__version__, e))
    import torch.multiprocessing as mp
    job = "gpu-check-dtensor-%d" % os.getpid()
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(a.addr, job, tmp), nprocs=2, join=True)
        with open(os.path.join(tmp, "result.json")) as f:
            got = json.load(f)
    import tenplex
    tenplex.Client(a.addr).request("DELETE", "/api/v1/dirs/job/%s" % job, ok=(200, 404), params={"recursive": "true"})
    return ("DTensor T=2 -> T=1 through the daemon: %d tensors equal full_tensor() bit for bit; worst difference "
            "from the unsharded model %.2g" % (got["checked"], got["worst_vs_unsharded"]), got)


if __name__ == "__main__":
    exit_with(main(run, arguments(__doc__.split("\n")[0])))
