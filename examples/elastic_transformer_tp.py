"""An ``nn.Transformer`` made elastic across changes of the tensor-parallel size T (and of D), with a
description: ``tenplex.describe`` with the shipped ``transformer`` rules (plus the encoder's and
decoder's final norms, replicated) gives the spec, each rank keeps only its part of every tensor
(``tenplex.shard``), and the daemon splits and merges the parts at each change of T.

Training is examples/elastic_dp.py's transformer (float64, AdamW, MultiStepLR, CPU over gloo), in
the simplest tensor-parallel form: before each step the tensor ranks of a data-parallel index gather
their parts into the whole model, every rank computes the gradients of its index's share of the
global batch, the gradients are averaged over the data-parallel ranks, and each rank steps AdamW on
its own part of every parameter (AdamW is elementwise, so the parts step as the whole would). A run
therefore equals a static one-rank run within rounding, whatever T and D are.

Each rank saves what a training loop saves (``model`` and ``optimizer`` by parameter name, as parts;
``scheduler``, ``epoch``, ``step``, ``rng``, ``args``, ``best_acc``, which the spec does not place
and the daemon carries, checked equal across the tensor ranks of a data-parallel index: the RNG
streams are seeded per data-parallel index). ``--store torch:DIR`` runs the same schedule with
``torch.save``/``torch.load`` files and does by hand what the daemon does: rank (t, d) reads the parts
every old tensor rank of data-parallel index d (else 0) saved, joins them and cuts its own.

Run each rank with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, ``TENPLEX_JOB``,
``TENPLEX_CONFIG`` (with ``tp`` and ``dp``) and ``TENPLEX_ADDR`` set:
``python3 examples/elastic_transformer_tp.py --until STEP``. tests/python/test_elastic_tp.py drives it.
"""

import argparse
import json
import os
import random
import sys

import numpy as np
import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients", "python"))
sys.path.insert(0, HERE)
import elastic_dp as base  # noqa: E402
import tenplex  # noqa: E402

RULES = [{"match": "*coder.norm.*", "partition": "replicated"}, "transformer"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--until", type=int, required=True, help="train up to this step, save, exit")
    p.add_argument("--global-batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--store", default="tenplex", help="tenplex, or torch:DIR for torch.save files")
    p.add_argument("--out", default=None, help="write the final state here (torch.save) when rank 0 ends")
    return p.parse_args(argv)


class Parts:
    """This rank's part of every parameter of the whole model, and the gather and cut around a step."""

    def __init__(self, full, spec, t, T, tp_group):
        self.full, self.t, self.T, self.group = full, t, T, tp_group
        self.partition = {s["name"]: s["partition"] for s in spec["tensors"]}
        self.named = [(n, torch.nn.Parameter(tenplex.shard(p.detach(), self.partition[n], t, T)))
                      for n, p in full.named_parameters()]

    def gather(self):
        """Copies the tensor ranks' parts into the whole model."""
        with torch.no_grad():
            for (n, part), whole in zip(self.named, self.full.parameters()):
                kind = self.partition[n]["kind"]
                if kind == "replicated" or self.T == 1:
                    whole.copy_(part)
                    continue
                pieces = [torch.empty_like(part) for _ in range(self.T)]
                dist.all_gather(pieces, part.detach().contiguous(), group=self.group)
                whole.copy_(torch.cat(pieces, self.partition[n]["dim"]))

    def cut_grads(self):
        for (n, part), whole in zip(self.named, self.full.parameters()):
            part.grad = tenplex.shard(whole.grad, self.partition[n], self.t, self.T)

    def state(self):
        return {n: p.detach().clone() for n, p in self.named}

    def load(self, state):
        with torch.no_grad():
            for n, p in self.named:
                p.copy_(state[n])


def groups(T, D):
    """Every rank makes every group (gloo needs it); this rank's tensor group and data-parallel group."""
    rank = dist.get_rank()
    tp = [dist.new_group([d * T + t for t in range(T)]) for d in range(D)]
    dp = [dist.new_group([d * T + t for d in range(D)]) for t in range(T)]
    return tp[rank // T], dp[rank % T]


def state_of(parts, opt, sched, step, a, best):
    return {"model": parts.state(), "optimizer": tenplex.optimizer_state_by_name(opt, parts.named),
            "scheduler": sched.state_dict(), "epoch": step // 4, "step": step, "best_acc": best,
            "args": argparse.Namespace(**vars(a)),
            "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}}


def restore(st, parts, opt, sched):
    parts.load(st["model"])
    tenplex.load_optimizer_state_by_name(opt, parts.named, st["optimizer"])
    sched.load_state_dict(st["scheduler"])
    torch.set_rng_state(st["rng"]["torch"])
    np.random.set_state(st["rng"]["numpy"])
    random.setstate(st["rng"]["python"])
    return st["step"], st["best_acc"]


def load_files(d_dir, parts, t, d):
    """What the daemon does at a change of T, by hand: join the old tensor ranks' parts, cut ours."""
    latest = os.path.join(d_dir, "latest")
    if not os.path.exists(latest):
        return None
    with open(latest) as f:
        old = json.load(f)
    index = d if d < old["dp"] else 0
    saved = [torch.load(os.path.join(d_dir, str(old["step"]), "rank-%d.pt" % (index * old["tp"] + u)),
                        weights_only=False)  # our own files (RNG, args): torch 2.6 defaults to True
             for u in range(old["tp"])]

    def recut(name, pieces):
        p = parts.partition[name]
        whole = pieces[0] if p["kind"] == "replicated" else torch.cat(pieces, p["dim"])
        return tenplex.shard(whole, p, t, parts.T)

    st = dict(saved[0])
    st["model"] = {n: recut(n, [s["model"][n] for s in saved]) for n in saved[0]["model"]}
    st["optimizer"] = {k: ({n: recut(n, [s["optimizer"][k][n] for s in saved]) for n in v}
                           if isinstance(v, dict) else v) for k, v in saved[0]["optimizer"].items()}
    return st


def save_files(d_dir, rank, st, step, T, D):
    os.makedirs(os.path.join(d_dir, str(step)), exist_ok=True)
    torch.save(st, os.path.join(d_dir, str(step), "rank-%d.pt" % rank))
    dist.barrier()
    if rank == 0:
        with open(os.path.join(d_dir, "latest"), "w") as f:
            json.dump({"step": step, "tp": T, "dp": D}, f)


def main(a):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    c = json.loads(os.environ["TENPLEX_CONFIG"])
    T, D = int(c.get("tp", 1)), int(c["dp"])
    assert T * D == world and int(c.get("pp", 1)) == 1, c
    t, d = rank % T, rank // T  # Megatron's rank order: tensor ranks next to each other
    dist.init_process_group("gloo", rank=rank, world_size=world)
    tp_group, dp_group = groups(T, D)
    torch.manual_seed(a.seed)
    full = base.build("transformer").double()
    spec = tenplex.describe(full, RULES, torch.optim.AdamW, configs=[(T, 1, D)])
    parts = Parts(full, spec, t, T, tp_group)
    opt = torch.optim.AdamW([p for _, p in parts.named], lr=a.lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [3, 7, 11], 0.5)
    torch.manual_seed(a.seed + 1000 * d)  # per data-parallel index: equal on the tensor ranks of an index
    random.seed(d)
    np.random.seed(d)
    step, best = 0, 0.0
    if a.store == "tenplex":
        try:
            st = tenplex.load()[0]
        except tenplex.NoCheckpoint:
            st = None
    else:
        st = load_files(a.store.split(":", 1)[1], parts, t, d)
    if st is not None:
        step, best = restore(st, parts, opt, sched)
    per = a.global_batch // D
    while step < a.until:
        x, y = base.batch("transformer", step, a)
        parts.gather()
        full.zero_grad()
        loss = base.loss_of("transformer", full, x[:, d * per:(d + 1) * per], y[:, d * per:(d + 1) * per])
        loss.backward()
        for p in full.parameters():
            dist.all_reduce(p.grad, group=dp_group)
            p.grad /= D
        parts.cut_grads()
        opt.step()
        sched.step()
        total = loss.detach().clone()
        dist.all_reduce(total, group=dp_group)
        best = max(best, -float(total) / D)
        step += 1
    st = state_of(parts, opt, sched, step, a, best)
    if a.store == "tenplex":
        tenplex.save(st, step=step, spec=spec)
    else:
        save_files(a.store.split(":", 1)[1], rank, st, step, T, D)
    if a.out and rank == 0:
        torch.save(st, a.out)
    dist.barrier()
    tenplex.end_process_group()


if __name__ == "__main__":
    main(parse_args())
