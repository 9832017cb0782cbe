"""An elastic data-parallel training loop with no model description: a CNN with BatchNorm or an
``nn.Transformer``, trained in float64 with AdamW and a MultiStepLR schedule on CPU over gloo.

Each rank saves what a training loop saves every day (``model``, ``optimizer``, ``scheduler``,
``epoch``, ``step``, ``rng``, ``args``, ``best_acc``) with ``tenplex.save(state, step=step)``: no
``describe``, no rules, no spec. Between launches the daemon changes the number of data-parallel
ranks (every configuration has T = P = 1, docs/PTC.md "Data-parallel-only jobs need no
description"): new rank d loads old rank d's state, a rank beyond the old ones rank 0's.

``--store torch:DIR`` runs the same schedule with ``torch.save``/``torch.load`` files instead
(rank d loads ``DIR/<step>/rank-<d>.pt``, else rank 0's), which the tenplex run must equal bit for
bit. The global batch of each step is drawn from the seed and the step alone and split evenly over
the ranks, and gradients are averaged over them, so without batch-dependent layers a run equals a
static one within rounding; the CNN's BatchNorm normalises each rank's batch on its own (and keeps
per-rank running statistics), so it does not, unless SyncBatchNorm is used. The CNN also adds noise
from each rank's own torch RNG, so a rank that resumed another rank's RNG state would differ.

Run each rank with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, ``TENPLEX_JOB``,
``TENPLEX_CONFIG`` and ``TENPLEX_ADDR`` set (what ``tenplex run`` sets):
``python3 examples/elastic_dp.py --model cnn --until STEP``; it loads the newest state (or starts
from the seed), trains to STEP, saves and exits. tests/python/test_elastic_dp.py drives it.
"""

import argparse
import json
import os
import random
import sys

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
import tenplex  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=("cnn", "transformer"), required=True)
    p.add_argument("--until", type=int, required=True, help="train up to this step, save, exit")
    p.add_argument("--global-batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--store", default="tenplex", help="tenplex, or torch:DIR for torch.save files")
    p.add_argument("--out", default=None, help="write the final state here (torch.save) when rank 0 ends")
    return p.parse_args(argv)


def build(kind):
    if kind == "cnn":
        return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten(), torch.nn.Linear(16, 3))
    return torch.nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                                dropout=0.0)


def batch(kind, step, a):
    g = torch.Generator().manual_seed(a.seed * 100003 + step)
    if kind == "cnn":
        return torch.randn(a.global_batch, 1, 6, 6, generator=g, dtype=torch.float64), \
            torch.randint(0, 3, (a.global_batch,), generator=g)
    return torch.randn(5, a.global_batch, 16, generator=g, dtype=torch.float64), \
        torch.randn(4, a.global_batch, 16, generator=g, dtype=torch.float64)


def loss_of(kind, model, x, y):
    if kind == "cnn":
        x = x + 0.01 * torch.randn(x.shape, dtype=x.dtype)  # each rank's own RNG stream
        return torch.nn.functional.cross_entropy(model(x), y)
    return model(x, y).pow(2).mean()


def state_of(model, opt, sched, step, a, best):
    return {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "epoch": step // 4, "step": step, "best_acc": best, "args": argparse.Namespace(**vars(a)),
            "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}}


def restore(st, model, opt, sched):
    model.load_state_dict(st["model"])
    opt.load_state_dict(st["optimizer"])
    sched.load_state_dict(st["scheduler"])
    torch.set_rng_state(st["rng"]["torch"])
    np.random.set_state(st["rng"]["numpy"])
    random.setstate(st["rng"]["python"])
    return st["step"], st["best_acc"]


def load(a, rank):
    if a.store == "tenplex":
        try:
            st, _ = tenplex.load()
            return st
        except tenplex.NoCheckpoint:
            return None
    d = a.store.split(":", 1)[1]
    latest = os.path.join(d, "latest")
    if not os.path.exists(latest):
        return None
    with open(latest) as f:
        step = f.read().strip()
    own, first = (os.path.join(d, step, "rank-%d.pt" % r) for r in (rank, 0))
    return torch.load(own if os.path.exists(own) else first, weights_only=False)  # our own files (RNG, args)


def save(a, rank, world, st, step):
    if a.store == "tenplex":
        tenplex.save(st, step=step)
        return
    d = os.path.join(a.store.split(":", 1)[1], str(step))
    os.makedirs(d, exist_ok=True)
    torch.save(st, os.path.join(d, "rank-%d.pt" % rank))
    dist.barrier()
    if rank == 0:
        with open(os.path.join(a.store.split(":", 1)[1], "latest"), "w") as f:
            f.write(str(step))


def main(a):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(a.seed)
    model = build(a.model).double()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [3, 7, 11], 0.5)
    torch.manual_seed(a.seed + 1000 * rank)
    random.seed(rank)
    np.random.seed(rank)
    step, best = 0, 0.0
    st = load(a, rank)
    if st is not None:
        step, best = restore(st, model, opt, sched)
    per = a.global_batch // world
    while step < a.until:
        x, y = batch(a.model, step, a)
        sl = slice(rank * per, (rank + 1) * per)
        model.train()
        opt.zero_grad()
        loss = loss_of(a.model, model, x[sl] if a.model == "cnn" else x[:, sl], y[sl] if a.model == "cnn" else y[:, sl])
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        sched.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        best = max(best, -float(total) / world)
        step += 1
        if rank == 0:
            print(json.dumps({"step": step, "loss": float(total) / world, "world": world}), flush=True)
    save(a, rank, world, state_of(model, opt, sched, step, a, best), step)
    if a.out and rank == 0:
        torch.save(state_of(model, opt, sched, step, a, best), a.out)
    dist.barrier()
    tenplex.end_process_group()


if __name__ == "__main__":
    main(parse_args())
