"""A training script run under ``torchrun --rdzv-backend tenplex`` by test_torchrun.py.

``--plain``: an unmodified torchrun script (no tenplex call): each worker joins the process group,
all-reduces its rank and writes what it saw to ``OUT/plain-<rank>.json``.

Otherwise an elastic one: least squares by gradient descent on a fixed global batch per step (float64),
split over the ranks of whatever world the round has, gradients summed with all_reduce, so that the
weights after S steps do not depend on the worlds the steps ran under. It loads the newest state, calls
``tenplex.should_stop`` every step (save, then return), and ends once ``OUT/finish`` exists (rank 0 reads
it, every rank agrees), saving its final state; ``--save-every N`` also saves every N steps (what a node's
loss falls back on). Every rank appends a line per step to ``OUT/steps.jsonl``;
rank 0 writes ``OUT/final.json`` at the end."""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
import tenplex  # noqa: E402

DIM, BATCH, LR = 7, 24, 0.05


def batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(BATCH, DIM, generator=g, dtype=torch.float64)
    y = x @ torch.arange(1, DIM + 1, dtype=torch.float64) + 0.1 * torch.randn(BATCH, generator=g, dtype=torch.float64)
    return x, y


def step_once(w, step, rank, world):
    x, y = batch(step)
    x, y = x[rank::world], y[rank::world]
    grad = x.t() @ (x @ w - y) * (2.0 / BATCH)
    dist.all_reduce(grad)
    return w - LR * grad


def reference(steps):
    """The weights after ``steps`` steps on one process."""
    w = torch.zeros(DIM, dtype=torch.float64)
    for s in range(steps):
        x, y = batch(s)
        w = w - LR * (x.t() @ (x @ w - y) * (2.0 / BATCH))
    return w


def plain(out):
    dist.init_process_group("gloo")
    t = torch.tensor([float(dist.get_rank())])
    dist.all_reduce(t)
    with open(os.path.join(out, "plain-%d.json" % dist.get_rank()), "w") as f:
        json.dump({"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": t.item(),
                   "env_world": int(os.environ["WORLD_SIZE"]), "job": os.environ.get("TENPLEX_JOB")}, f)
    dist.destroy_process_group()  # t, the collective's tensor, is still held (docs/TORCH.md)


def elastic(out, pace, save_every):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    state = {"w": torch.zeros(DIM, dtype=torch.float64)}
    try:
        state, step = tenplex.load(into=state)
    except tenplex.NoCheckpoint:
        step = 0
    w = state["w"]
    log = open(os.path.join(out, "steps.jsonl"), "a")
    while True:
        done = torch.tensor([1 if rank == 0 and os.path.exists(os.path.join(out, "finish")) else 0])
        dist.broadcast(done, 0)
        if done.item() or tenplex.should_stop(step=step):
            tenplex.save({"w": w}, step=step)
            break
        w = step_once(w, step, rank, world)
        step += 1
        log.write(json.dumps({"rank": rank, "world": world, "step": step, "round": int(os.environ["TENPLEX_RDZV_ROUND"]),
                              "tp_pp_dp": [os.environ.get("TENPLEX_" + k) for k in ("TP", "PP", "DP")]}) + "\n")
        log.flush()
        if save_every and step % save_every == 0:
            tenplex.save({"w": w}, step=step)
        time.sleep(pace)
    log.close()
    if done.item() and rank == 0:
        with open(os.path.join(out, "final.json"), "w") as f:
            json.dump({"step": step, "w": w.tolist(), "reference": reference(step).tolist()}, f)
    tenplex.end_process_group()  # cannot hang on torch 2.x's gloo (docs/TORCH.md)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--plain", action="store_true")
    p.add_argument("--pace", type=float, default=0.05)
    p.add_argument("--save-every", type=int, default=0, help="also save a generation every N steps")
    a = p.parse_args()
    plain(a.out) if a.plain else elastic(a.out, a.pace, a.save_every)
