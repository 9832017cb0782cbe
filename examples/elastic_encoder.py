"""An elastic torch.nn.TransformerEncoder classifier, made elastic with no hand-written model spec.

The model is a plain ``nn.Module`` (not GPT-like): a token embedding, a sinusoidal position buffer,
``nn.TransformerEncoder`` (post-norm layers with packed ``in_proj`` attention), a final norm, a
classifier head (untied) and a token-reconstruction head whose weight is the embedding's (tied). It
is trained in float64 with Adam on CPU over gloo, under tensor (T), pipeline (P) and data (D)
parallelism that change between launches.

How it is cut is written once, as partition rules (examples/encoder_rules.json, then tenplex's
shipped ``transformer`` rules): the embedding and the tied head vocabulary-parallel (padded to a
multiple of 8 x T), ``linear1`` column-parallel, ``linear2`` and ``out_proj`` row-parallel, the
rest replicated. ``tenplex.describe`` turns the module, the rules and the optimizer class into the
model spec, ``tenplex.save(..., spec=...)`` stores it with the job at the first save, and every
reconfiguration uses it. The training code shards the weights itself by the same rules
(``tenplex.shard``), so the rules are the single description of the parallelism.

Each rank builds the whole model from the seed (so every configuration starts equal), keeps its
stage's tensors (layers [s*L/P, (s+1)*L/P), renumbered from 0; the embedding and the buffer on the
first stage; the norm and heads on the last) and its tensor rank's part of each. Attention: each
rank computes its own heads from their rows of the replicated ``in_proj`` (whose gradients are then
summed over tensor ranks). The tied weight lives on the first and the last stage when P > 1 (its
gradients summed between them, as Megatron-LM does) and is one parameter when P = 1.

Run: ``RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. TENPLEX_TP=.. TENPLEX_PP=.. TENPLEX_CONFIG=..
TENPLEX_JOB=.. TENPLEX_ADDR=.. python3 examples/elastic_encoder.py --until STEP`` for each rank (what
``tenplex run`` sets); it loads the job's newest state (or starts from the seed), trains to STEP,
saves and exits. tests/python/test_describe_elastic.py drives it.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients", "python"))
import tenplex  # noqa: E402

RULES = [os.path.join(HERE, "encoder_rules.json"), "transformer"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--until", type=int, required=True, help="train up to this step, save, exit")
    p.add_argument("--global-batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=64)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--samples", type=int, default=480)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--out", default=".", help="directory for <job>.jsonl (losses and events)")
    p.add_argument("--store", choices=("spec", "rules"), default="spec",
                   help="what the first save stores with the job: the described spec, or only the rules (the "
                        "daemon then infers the model from the saved shards)")
    return p.parse_args(argv)


# ---------------------------------------------------------------- the model (a plain nn.Module)

class Classifier(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        pos = torch.arange(a.seq, dtype=torch.float64)[:, None] / 10000 ** (
            torch.arange(0, a.hidden, 2, dtype=torch.float64) / a.hidden)
        self.register_buffer("pos", torch.stack([pos.sin(), pos.cos()], -1).reshape(a.seq, a.hidden))
        self.embed = torch.nn.Embedding(a.vocab, a.hidden)
        layer = torch.nn.TransformerEncoderLayer(a.hidden, a.heads, a.ffn, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(a.hidden)
        self.head = torch.nn.Linear(a.hidden, a.classes)
        self.lm_head = torch.nn.Linear(a.hidden, a.vocab, bias=False)
        self.lm_head.weight = self.embed.weight  # tied
        self.double()
        g = torch.Generator().manual_seed(a.seed)
        with torch.no_grad():
            for name, p in self.named_parameters():
                noise = torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.05
                p.copy_(noise + 1 if "norm" in name and name.endswith("weight") else noise)


# ---------------------------------------------------------------- tensor-parallel autograd functions

class CopyToTP(torch.autograd.Function):
    """Identity forward, all-reduce of the gradient backward (before a column-parallel layer)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        if ctx.group is not None:
            g = g.clone()
            dist.all_reduce(g, group=ctx.group)
        return g, None


class ReduceFromTP(torch.autograd.Function):
    """All-reduce forward (summing a row-parallel layer's partial outputs), identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        if group is not None:
            x = x.clone()
            dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


class GatherFromTP(torch.autograd.Function):
    """The vocabulary-parallel logits of every tensor rank, concatenated; backward: this rank's part."""

    @staticmethod
    def forward(ctx, x, group, tp, T):
        ctx.tp, ctx.n = tp, x.shape[-1]
        if group is None:
            return x
        parts = [torch.empty_like(x) for _ in range(T)]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, -1)

    @staticmethod
    def backward(ctx, g):
        return g.narrow(-1, ctx.tp * ctx.n, ctx.n).contiguous(), None, None, None


# ---------------------------------------------------------------- one rank's stage

class Stage:
    """This rank's tensors (its stage's, its tensor rank's part of each) under local names."""

    def __init__(self, a, full, spec, c):
        self.a, self.c = a, c
        per = spec["layers"] // c["P"]
        self.first_layer = c["pp"] * per
        self.layers = per
        self.first, self.last = c["pp"] == 0, c["pp"] == c["P"] - 1
        params = {n for n, _ in full.named_parameters()} | set(spec["ties"])
        values = full.state_dict()
        self.tensors, self.named = {}, {}  # local name -> tensor; local name -> Parameter
        made = {}
        for t in spec["tensors"]:
            name = t["name"]
            if name.startswith("optimizer.") or self._stage(t, per) != c["pp"]:
                continue
            local = name.replace("layers.%d." % t["layer"], "layers.%d." % (t["layer"] - self.first_layer), 1) \
                if "layer" in t else name
            orig = spec["ties"].get(name)
            if orig in made:  # the tied original is on this stage: one parameter under both names
                obj = made[orig]
            else:
                part = tenplex.shard(values[name].detach(), t["partition"], c["tp"], c["T"])
                obj = torch.nn.Parameter(part) if name in params else part
                made[name] = obj
            self.tensors[local] = obj
            if name in params:
                self.named[local] = obj

    def _stage(self, t, per):
        if "layer" in t:
            return t["layer"] // per
        return 0 if t["stage"] == "first" else self.c["P"] - 1

    def p(self, local):
        return self.tensors[local]

    def unique_params(self):
        seen, out = set(), []
        for p in self.named.values():
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
        return out

    def state(self):
        return {k: v.detach() for k, v in self.tensors.items()}

    def load(self, state):
        with torch.no_grad():
            for local, t in self.tensors.items():
                if local not in state:
                    raise KeyError("the loaded state has no %s" % local)
                if tuple(state[local].shape) != tuple(t.shape):
                    raise ValueError("%s: loaded %s, expected %s" % (local, tuple(state[local].shape), tuple(t.shape)))
                t.copy_(state[local])

    def forward(self, h, tokens):
        a, g = self.a, self.c["tp_group"]
        if self.first:
            E = self.p("embed.weight")
            local = tokens - self.c["tp"] * E.shape[0]
            outside = (local < 0) | (local >= E.shape[0])
            e = F.embedding(local.masked_fill(outside, 0), E) * (~outside).unsqueeze(-1)
            h = ReduceFromTP.apply(e, g) + self.p("pos")[: tokens.shape[1]]
        for i in range(self.layers):
            h = self.layer(h, "encoder.layers.%d." % i)
        return h

    def layer(self, h, q):
        a, g, T, tp = self.a, self.c["tp_group"], self.c["T"], self.c["tp"]
        b, s, H = h.shape
        hd, hr = H // a.heads, a.heads // T
        x = CopyToTP.apply(h, g)
        rows = torch.cat([torch.arange(k * H + tp * hr * hd, k * H + (tp + 1) * hr * hd) for k in range(3)])
        qkv = F.linear(x, self.p(q + "self_attn.in_proj_weight")[rows], self.p(q + "self_attn.in_proj_bias")[rows])
        qq, kk, vv = (t.reshape(b, s, hr, hd).transpose(1, 2) for t in qkv.split(hr * hd, -1))
        att = (qq @ kk.transpose(-1, -2) / math.sqrt(hd)).softmax(-1)
        y = (att @ vv).transpose(1, 2).reshape(b, s, hr * hd)
        y = ReduceFromTP.apply(F.linear(y, self.p(q + "self_attn.out_proj.weight")), g)
        h = F.layer_norm(h + y + self.p(q + "self_attn.out_proj.bias"), (H,), self.p(q + "norm1.weight"),
                         self.p(q + "norm1.bias"))
        x = CopyToTP.apply(h, g)
        y = F.relu(F.linear(x, self.p(q + "linear1.weight"), self.p(q + "linear1.bias")))
        y = ReduceFromTP.apply(F.linear(y, self.p(q + "linear2.weight")), g)
        return F.layer_norm(h + y + self.p(q + "linear2.bias"), (H,), self.p(q + "norm2.weight"),
                            self.p(q + "norm2.bias"))

    def loss(self, h, tokens, labels):
        """This data rank's share of the global mean loss: classification plus token reconstruction."""
        a, g = self.a, self.c["tp_group"]
        hn = F.layer_norm(h, (a.hidden,), self.p("norm.weight"), self.p("norm.bias"))
        cls = F.linear(hn.mean(1), self.p("head.weight"), self.p("head.bias"))
        lm = F.linear(CopyToTP.apply(hn, g), self.p("lm_head.weight"))
        lm = GatherFromTP.apply(lm, g, self.c["tp"], self.c["T"])[..., : a.vocab]
        rec = F.cross_entropy(lm.reshape(-1, a.vocab), tokens.reshape(-1), reduction="sum") / a.seq
        return (F.cross_entropy(cls, labels, reduction="sum") + 0.5 * rec) / a.global_batch


# ---------------------------------------------------------------- the job

def data(a):
    rng = np.random.default_rng(a.seed + 1)
    tokens = torch.from_numpy(rng.integers(0, a.vocab, (a.samples, a.seq)))
    return tokens, tokens[:, 0] % a.classes


def groups(T, P, D, tp, dp, pp):
    """This rank's tensor, data and tied-weight groups (every rank creates every group, in order)."""
    out = {"tp_group": None, "dp_group": None, "tie_group": None}
    rank = lambda t, d, p: p * T * D + d * T + t  # noqa: E731  (Megatron's order: tensor, data, pipeline)
    for p_ in range(P):
        for d_ in range(D):
            g = dist.new_group([rank(t, d_, p_) for t in range(T)])
            if (p_, d_) == (pp, dp) and T > 1:
                out["tp_group"] = g
        for t_ in range(T):
            g = dist.new_group([rank(t_, d, p_) for d in range(D)])
            if (p_, t_) == (pp, tp) and D > 1:
                out["dp_group"] = g
    for d_ in range(D):
        for t_ in range(T):
            g = dist.new_group([rank(t_, d_, 0), rank(t_, d_, P - 1)]) if P > 1 else None
            if (d_, t_) == (dp, tp) and pp in (0, P - 1):
                out["tie_group"] = g
    return out


def main(a):
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    T, P = int(os.environ.get("TENPLEX_TP", 1)), int(os.environ.get("TENPLEX_PP", 1))
    D = world // (T * P)
    job = os.environ.get("TENPLEX_JOB", "elastic-encoder")
    tp, dp, pp = rank % T, (rank // T) % D, rank // (T * D)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    c = dict(T=T, P=P, D=D, tp=tp, dp=dp, pp=pp, **groups(T, P, D, tp, dp, pp))
    full = Classifier(a)
    spec = tenplex.describe(full, RULES, torch.optim.Adam, configs=[(T, P, D)])
    stage = Stage(a, full, spec, c)
    opt = torch.optim.Adam(stage.unique_params(), lr=a.lr)
    client = tenplex.Client()
    try:
        state, step = tenplex.load(job, rank, client)
        stage.load(state["model"])
        tenplex.load_optimizer_state_by_name(opt, stage.named, state["optimizer"])
        how = "loaded step %d" % step
    except tenplex.NoCheckpoint:
        step, how = 0, "initialised from seed %d" % a.seed
    if rank == 0:
        log(a, job, {"event": "start", "step": step, "config": [T, P, D], "how": how})
    tokens, labels = data(a)
    while step < a.until:
        ids = [(step * a.global_batch + j) % a.samples for j in range(a.global_batch)]
        mine = ids[dp * len(ids) // D:(dp + 1) * len(ids) // D]
        loss = train_step(a, stage, opt, tokens[mine], labels[mine], c, rank)
        total = torch.tensor([loss if (pp == P - 1 and tp == 0) else 0.0], dtype=torch.float64)
        dist.all_reduce(total)
        step += 1
        if rank == 0:
            log(a, job, {"step": step, "loss": float(total[0]), "ids": ids, "config": [T, P, D]})
    saved = {"model": stage.state(), "optimizer": tenplex.optimizer_state_by_name(opt, stage.named)} \
        if dp == 0 else None  # data-parallel replicas hold the same state
    if a.store == "spec":
        tenplex.save(saved, job, step, rank, world, client=client, spec=spec)
    else:
        tenplex.save(saved, job, step, rank, world, client=client, rules=RULES, rule_params={"vocab": a.vocab})
    dist.barrier()
    if rank == 0:
        log(a, job, {"event": "saved", "step": step, "config": [T, P, D]})
    tenplex.end_process_group()


def train_step(a, stage, opt, tokens, labels, c, rank):
    T, D, P, pp = c["T"], c["D"], c["P"], c["pp"]
    opt.zero_grad(set_to_none=False)
    h_in = None
    if pp > 0:
        h_in = torch.empty(tokens.shape[0], a.seq, a.hidden, dtype=torch.float64)
        dist.recv(h_in, src=rank - T * D)
        h_in.requires_grad_()
    out = stage.forward(h_in, tokens)
    loss = 0.0
    if pp == P - 1:
        part = stage.loss(out, tokens, labels)
        part.backward()
        loss = float(part.detach())
    else:
        dist.send(out.detach(), dst=rank + T * D)
        g = torch.empty_like(out)
        dist.recv(g, src=rank + T * D)
        out.backward(g)
    if pp > 0:
        dist.send(h_in.grad, dst=rank - T * D)
    reduce_grads(stage, c)
    opt.step()
    return loss


def reduce_grads(stage, c):
    """Sums the partial gradients: in_proj over tensor ranks (each computed its own heads' rows), the
    tied weight between the first and last stage (P > 1), everything over data ranks."""
    if c["tp_group"] is not None:
        for local, p in stage.named.items():
            if ".self_attn.in_proj_" in local:
                dist.all_reduce(p.grad, group=c["tp_group"])
    if c["tie_group"] is not None:
        tied = stage.named.get("embed.weight", stage.named.get("lm_head.weight"))
        dist.all_reduce(tied.grad, group=c["tie_group"])
    if c["dp_group"] is not None:
        for p in stage.unique_params():
            dist.all_reduce(p.grad, group=c["dp_group"])


def log(a, job, record):
    record["time"] = time.time()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, job + ".jsonl"), "a") as f:
        f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main(parse_args())
