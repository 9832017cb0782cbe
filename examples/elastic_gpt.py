"""An elastic GPT-style training job: tensor, pipeline and data parallelism that change mid-run.

A small decoder-only transformer in PyTorch, parallelised as Megatron-LM does it:
* tensor parallelism (T): column-parallel ``attn.qkv`` and ``mlp.fc1`` (split by output rows, whole
  attention heads per rank), row-parallel ``attn.proj`` and ``mlp.fc2`` (split by input columns, the
  partial outputs summed by an all-reduce), with the autograd collectives that make the gradients
  right (identity forward / all-reduce backward before a column-parallel layer, all-reduce forward /
  identity backward after a row-parallel one);
* pipeline parallelism (P): stage s holds layers [s*L/P, (s+1)*L/P) (renumbered from 0), the
  embeddings on the first stage, the final norm and head on the last; stages exchange activations
  forward and their gradients backward with send/recv;
* data parallelism (D): each data-parallel rank reads its part of every global batch from the
  tenplex dataset view (FUSE) and gradients are summed with an all-reduce.
It runs in float64 with Adam over torch.distributed's gloo backend, on the CPU or, with
``--device cuda``, with its tensors on the GPU (the collectives go through host memory: one GPU can
hold every rank). The global batch is fixed,
so every configuration computes the same mathematical step; results differ from a (1,1,1) run only
by floating-point summation order.

The state is saved with ``tenplex.save`` when ``tenplex.should_stop`` says so (and at the end, and
after the steps given with ``--save-at``) and loaded with ``tenplex.load`` when the job is relaunched
under a new configuration, or after a lost worker from the recovered generation (``--hold-at`` stops
the job at a step for a test to kill a worker there; tests/python/elastic_loss.py). Launch it with
``tenplex run --schedule schedule.json -- python3 examples/elastic_gpt.py --dataset ... --mount ...``
(see README.md); ``tenplex run`` sets RANK, WORLD_SIZE, MASTER_ADDR/PORT and TENPLEX_* for each rank.
The training loop is ``train(a, cfg)``, run by ``tenplex.elastic``: under ``tenplex run --live`` a rank
that continues under the new configuration keeps its process and ``train`` runs again with the new
``cfg`` (docs/LIVE.md); otherwise every rank is relaunched and ``train`` runs once per process.

Rank 0 prints the loss of every step and, when training ends, draws the loss of the whole run with
its reconfigurations marked (``<out>/<job>-loss.png``, ``--plot``); ``--compare static.jsonl`` adds a
static run and a panel of the difference (tenplex.plot, matplotlib).

``--make-data DIR`` writes the synthetic dataset (samples file and tenplex index) and exits; the
daemon reads them only if DIR is below one of its data roots (``tenplexd --data-root DIR``).
"""

import argparse
import json
import math
import os
import sys
import threading
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
import tenplex  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--global-batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--data-seed", type=int, default=7)
    p.add_argument("--dataset", help="index file of the dataset (the daemon reads it)")
    p.add_argument("--mount", help="where tenplexd mounted its FUSE view (default: read the view over REST)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the model's tensors live")
    p.add_argument("--out", default=".", help="directory for <job>.jsonl (losses, sample ids, events)")
    p.add_argument("--plot", metavar="PNG", help="where the loss plot goes when training ends "
                   "(default: <out>/<job>-loss.png; 'none': no plot)")
    p.add_argument("--compare", metavar="JSONL", help="a static run's log (e.g. <out>/static.jsonl): drawn in the "
                   "plot too, with a panel of the difference per step")
    p.add_argument("--make-data", metavar="DIR", help="write a synthetic dataset and its index into DIR, then exit")
    p.add_argument("--samples", type=int, default=480, help="samples written by --make-data")
    p.add_argument("--save-at", type=int, action="append", default=[], metavar="STEP",
                   help="also save a generation after STEP and go on training (repeatable)")
    p.add_argument("--hold-at", type=int, metavar="STEP",
                   help="after STEP, print 'holding at step STEP' and wait until killed (a test's failure point)")
    p.add_argument("--put-model-spec", action="store_true",
                   help="store the model spec with the job (TENPLEX_ADDR, TENPLEX_JOB) for the parallelizer, then exit")
    return p.parse_args(argv)


# ---------------------------------------------------------------- data

def make_data(a):
    """Sequences t_i = (start + i*stride) mod vocab: learnable, so the loss visibly falls."""
    os.makedirs(a.make_data, exist_ok=True)
    rng = np.random.default_rng(a.data_seed)
    n, length = a.samples, a.seq + 1
    starts = rng.integers(0, a.vocab, n)
    strides = rng.integers(1, 4, n)
    tokens = (starts[:, None] + strides[:, None] * np.arange(length)[None, :]) % a.vocab
    path = os.path.abspath(os.path.join(a.make_data, "tokens.bin"))
    tokens.astype("<i8").tofile(path)
    rec = length * 8
    with open(os.path.join(a.make_data, "index.txt"), "w") as f:
        f.write("1\n%s %d\n" % (path, n))
        for i in range(n):
            f.write("%d %d\n" % (i * rec, (i + 1) * rec))
    print("wrote %d samples of %d tokens to %s" % (n, length, path))


# ---------------------------------------------------------------- model description (for tenplex)

def global_params(a):
    """Every parameter of the whole model: name -> (shape, placement, partition) in a fixed order."""
    H, V, S, L, F4 = a.hidden, a.vocab, a.seq, a.layers, 4 * a.hidden
    hd = H // a.heads
    out = {"embed.weight": ((V, H), {"stage": "first"}, {"kind": "replicated"}),
           "pos.weight": ((S, H), {"stage": "first"}, {"kind": "replicated"})}
    for l in range(L):
        at = {"layer": l}
        p = "layers.%d." % l
        out[p + "ln1.weight"] = ((H,), at, {"kind": "replicated"})
        out[p + "ln1.bias"] = ((H,), at, {"kind": "replicated"})
        out[p + "attn.qkv.weight"] = ((3 * H, H), at, {"kind": "split", "dim": 0, "granule": 3 * hd})
        out[p + "attn.qkv.bias"] = ((3 * H,), at, {"kind": "split", "dim": 0, "granule": 3 * hd})
        out[p + "attn.proj.weight"] = ((H, H), at, {"kind": "split", "dim": 1, "granule": hd})
        out[p + "attn.proj.bias"] = ((H,), at, {"kind": "replicated"})
        out[p + "ln2.weight"] = ((H,), at, {"kind": "replicated"})
        out[p + "ln2.bias"] = ((H,), at, {"kind": "replicated"})
        out[p + "mlp.fc1.weight"] = ((F4, H), at, {"kind": "split", "dim": 0})
        out[p + "mlp.fc1.bias"] = ((F4,), at, {"kind": "split", "dim": 0})
        out[p + "mlp.fc2.weight"] = ((H, F4), at, {"kind": "split", "dim": 1})
        out[p + "mlp.fc2.bias"] = ((H,), at, {"kind": "replicated"})
    out["ln_f.weight"] = ((H,), {"stage": "last"}, {"kind": "replicated"})
    out["ln_f.bias"] = ((H,), {"stage": "last"}, {"kind": "replicated"})
    out["head.weight"] = ((V, H), {"stage": "last"}, {"kind": "replicated"})
    return out


def model_spec(a):
    """The tenplex model spec (docs/PTC.md): parameters and their Adam moments, partitioned alike."""
    tensors = []
    for name, (shape, at, part) in global_params(a).items():
        for key in (name, "optimizer.exp_avg." + name, "optimizer.exp_avg_sq." + name):
            t = {"name": key, "dtype": "f64", "shape": list(shape), "partition": part}
            t.update(at)
            tensors.append(t)
    return {"layers": a.layers, "tensors": tensors,
            "values": [{"key": "optimizer.step", "scope": "global"}, {"key": "optimizer.param_groups", "scope": "global"}]}


def init_full(a):
    """The whole model's initial values, from the seed alone (so every configuration starts equal)."""
    g = torch.Generator().manual_seed(a.seed)
    full = {}
    for name, (shape, _, _) in global_params(a).items():
        if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "ln_f.weight":
            full[name] = torch.ones(shape, dtype=torch.float64)
        elif name.endswith("bias"):
            full[name] = torch.zeros(shape, dtype=torch.float64)
        else:
            std = 0.02 / math.sqrt(2 * a.layers) if name.endswith(("proj.weight", "fc2.weight")) else 0.02
            full[name] = torch.randn(shape, generator=g, dtype=torch.float64) * std
    return full


def local_shape(shape, part, T):
    """The shape of one tensor-parallel rank's shard of a parameter of ``shape``."""
    if part["kind"] != "split":
        return tuple(shape)
    return tuple(n // T if d == part["dim"] else n for d, n in enumerate(shape))


def shard(t, part, tp, T):
    if part["kind"] != "split":
        return t.clone()
    n = t.shape[part["dim"]] // T
    return t.narrow(part["dim"], tp * n, n).clone()


# ---------------------------------------------------------------- collectives (gloo: device tensors via the host)

DEVICE = torch.device("cpu")


def all_reduce(t, group=None):
    if t.is_cuda:
        host = t.cpu()
        dist.all_reduce(host, group=group)
        t.copy_(host)
    else:
        dist.all_reduce(t, group=group)


def send(t, dst):
    dist.send(t.cpu() if t.is_cuda else t, dst=dst)


def recv(t, src):
    if t.is_cuda:
        host = torch.empty(t.shape, dtype=t.dtype)
        dist.recv(host, src=src)
        t.copy_(host)
    else:
        dist.recv(t, src=src)


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
            all_reduce(g, group=ctx.group)
        return g, None


class ReduceFromTP(torch.autograd.Function):
    """All-reduce forward (summing a row-parallel layer's partial outputs), identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        if group is not None:
            x = x.clone()
            all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


# The tensors of the configuration this process trained last, by global name (and ("exp_avg", name) for
# Adam's moments): in live mode the next configuration's Stage takes the storage of each one whose shape
# is unchanged, and the load overwrites it, so no memory new to the process is touched for it.
KEPT = {}


def kept_or_empty(key, shape):
    """The kept tensor ``key`` when it has ``shape`` (on this device), else a new uninitialised one."""
    t = KEPT.get(key)
    if t is not None and tuple(t.shape) == tuple(shape) and t.device == DEVICE and t.dtype == torch.float64:
        return t
    return torch.empty(shape, dtype=torch.float64, device=DEVICE)


class Stage(torch.nn.Module):
    """The layers of one pipeline stage, holding this tensor-parallel rank's shards. Its parameters are
    built uninitialised (or on the kept tensors of the last configuration): a load fills them, or
    ``init_from_seed`` does for a new job; nothing is initialised only to be overwritten."""

    def __init__(self, a, T, P, tp, pp, tp_group):
        super().__init__()
        self.a, self.T, self.tp, self.tp_group = a, T, tp, tp_group
        self.first, self.last = pp == 0, pp == P - 1
        per = a.layers // P
        self.global_layers = list(range(pp * per, (pp + 1) * per))
        self.heads = a.heads // T
        self.spec = global_params(a)
        self.names = {}  # local name -> global name
        shapes = {}
        for name, (shape, _, part) in self.spec.items():
            local = self._local(name)
            if local is not None:
                self.names[local] = name
                shapes[name] = local_shape(shape, part, T)
        unused = [k for k, t in KEPT.items()
                  if tuple(t.shape) != tuple(shapes.get(k[1] if isinstance(k, tuple) else k, ()))]
        for key in unused:
            del KEPT[key]  # freed before the new ones are made: the old and new state are not held at once
        for local, name in self.names.items():
            self.register_parameter(local.replace(".", "__"), torch.nn.Parameter(kept_or_empty(name, shapes[name])))

    def init_from_seed(self):
        """The initial values of a new job: this rank's shards of the whole model's (init_full)."""
        full = init_full(self.a)
        with torch.no_grad():
            for local, p in self.named().items():
                name = self.names[local]
                p.copy_(shard(full[name], self.spec[name][2], self.tp, self.T))

    def kept_moments(self):
        """Adam's moments as ``into=`` for a load: the kept tensors of the same shape, by local name."""
        out = {}
        for k in ("exp_avg", "exp_avg_sq"):
            out[k] = {local: KEPT[(k, name)] for local, name in self.names.items()
                      if (k, name) in KEPT and KEPT[(k, name)].shape == self.p(local).shape}
        return out

    def keep(self, opt):
        """What the next configuration of this process may reuse: the parameters and their moments."""
        KEPT.clear()
        for local, p in self.named().items():
            KEPT[self.names[local]] = p.detach()
            for k in ("exp_avg", "exp_avg_sq"):
                if k in opt.state.get(p, {}):
                    KEPT[(k, self.names[local])] = opt.state[p][k]

    def _local(self, name):
        if name.startswith("layers."):
            l = int(name.split(".")[1])
            if l not in self.global_layers:
                return None
            return "layers.%d.%s" % (l - self.global_layers[0], name.split(".", 2)[2])
        if name in ("embed.weight", "pos.weight"):
            return name if self.first else None
        return name if self.last else None

    def p(self, local):
        return getattr(self, local.replace(".", "__"))

    def named(self):
        """Parameters by their local dotted name (what is saved and what the model spec describes)."""
        return {local: self.p(local) for local in self.names}

    def state(self):
        return {local: p.detach() for local, p in self.named().items()}

    def load(self, state):
        with torch.no_grad():
            for local, p in self.named().items():
                if local not in state:
                    raise KeyError("the loaded state has no %s (it has %s)" % (local, sorted(state)[:5]))
                if state[local].shape != p.shape:
                    raise ValueError("%s: loaded %s, expected %s" % (local, tuple(state[local].shape), tuple(p.shape)))
                if state[local].data_ptr() != p.data_ptr():  # loaded into= the parameter: already there
                    p.copy_(state[local])

    def forward(self, h, tokens=None):
        a = self.a
        if self.first:
            h = self.p("embed.weight")[tokens] + self.p("pos.weight")[: tokens.shape[1]]
        for i in range(len(self.global_layers)):
            q = "layers.%d." % i
            h = h + self.attention(F.layer_norm(h, (a.hidden,), self.p(q + "ln1.weight"), self.p(q + "ln1.bias")), q)
            h = h + self.mlp(F.layer_norm(h, (a.hidden,), self.p(q + "ln2.weight"), self.p(q + "ln2.bias")), q)
        if self.last:
            h = F.layer_norm(h, (a.hidden,), self.p("ln_f.weight"), self.p("ln_f.bias"))
            return h @ self.p("head.weight").t()
        return h

    def attention(self, x, q):
        b, s, _ = x.shape
        hd = self.a.hidden // self.a.heads
        x = CopyToTP.apply(x, self.tp_group)
        qkv = F.linear(x, self.p(q + "attn.qkv.weight"), self.p(q + "attn.qkv.bias"))
        qkv = qkv.view(b, s, self.heads, 3, hd).permute(3, 0, 2, 1, 4)  # (3, b, heads, s, hd)
        att = (qkv[0] @ qkv[1].transpose(-1, -2)) / math.sqrt(hd)
        mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device=x.device), 1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ qkv[2]).transpose(1, 2).reshape(b, s, self.heads * hd)
        y = ReduceFromTP.apply(F.linear(y, self.p(q + "attn.proj.weight")), self.tp_group)
        return y + self.p(q + "attn.proj.bias")

    def mlp(self, x, q):
        x = CopyToTP.apply(x, self.tp_group)
        y = F.gelu(F.linear(x, self.p(q + "mlp.fc1.weight"), self.p(q + "mlp.fc1.bias")))
        y = ReduceFromTP.apply(F.linear(y, self.p(q + "mlp.fc2.weight")), self.tp_group)
        return y + self.p(q + "mlp.fc2.bias")


# ---------------------------------------------------------------- the job

def main(a):
    global DEVICE
    DEVICE = torch.device(a.device)
    tenplex.elastic(lambda cfg: train(a, cfg), backend="gloo")


def group(ranks, world):
    """The process group of ``ranks``: none for one rank, the default group for all of them (each new
    group costs a rendezvous at every start, relaunched or live), else a new one."""
    if len(ranks) == 1:
        return None
    return dist.group.WORLD if len(ranks) == world else dist.new_group(ranks)


def train(a, cfg):
    """Trains under ``cfg`` (a tenplex.Config) from the newest saved step until the stop flag or the end;
    tenplex.elastic calls it again with the new configuration after a live reconfiguration."""
    rank, world, T, P, D = cfg.rank, cfg.world, cfg.tp, cfg.pp, cfg.dp
    assert a.global_batch % D == 0, "the global batch %d must divide by D=%d" % (a.global_batch, D)
    job = os.environ.get("TENPLEX_JOB", "elastic-gpt")
    tp, dp, pp = cfg.tp_rank, cfg.dp_rank, cfg.pp_rank  # Megatron's order: tensor, data, pipeline
    tp_group = dp_group = None
    for p_ in range(P):  # every rank creates every group, in the same order
        for d_ in range(D):
            g = group([p_ * T * D + d_ * T + t for t in range(T)], world)
            tp_group = g if (p_, d_) == (pp, dp) else tp_group
        for t_ in range(T):
            g = group([p_ * T * D + d_ * T + t_ for d_ in range(D)], world)
            dp_group = g if (p_, t_) == (pp, tp) else dp_group
    client = tenplex.Client()
    if rank == 0:
        tenplex.put_file("/job/%s/model.json" % job, json.dumps(model_spec(a)), client)

    stage = Stage(a, T, P, tp, pp, tp_group)
    opt = torch.optim.Adam(list(stage.named().values()), lr=a.lr)
    try:  # straight into the parameters and the kept moments; the loaded moments become Adam's state
        state, step = tenplex.load(job, rank, client, into={"model": stage.state(), "optimizer": stage.kept_moments()})
        stage.load(state["model"])
        tenplex.load_optimizer_state_by_name(opt, stage.named(), state["optimizer"], copy=False)
        how = "loaded step %d from tenplex" % step
    except tenplex.NoCheckpoint:
        stage.init_from_seed()
        step, how = 0, "initialised from seed %d" % a.seed
    KEPT.clear()  # what this configuration did not take is freed
    local_batch = a.global_batch // D
    if cfg.local_rank == 0:  # the first rank on each worker mounts at its daemon
        client.request("POST", "/api/v1/datasets/%s/mount" % job, json={
            "index": os.path.abspath(a.dataset), "globalBatch": a.global_batch, "dpSize": D,
            "progress": step * a.global_batch, "seed": a.data_seed, "shuffle": True})
    if rank == 0:
        log(a, job, {"event": "start", "step": step, "config": [T, P, D], "how": how, "pid": os.getpid()})
    dist.barrier()
    reader = tenplex.RankReader(a.mount, job, dp, decode=lambda b: np.frombuffer(b, "<i8"), client=client)
    ids = reader.ids()
    batches = iter(reader)
    print("rank %d (tp %d, dp %d, pp %d of %d,%d,%d): %s" % (rank, tp, dp, pp, T, P, D, how), flush=True)

    first_step = step
    while step < a.steps:
        if tenplex.should_stop(job, step, client=client):
            break
        batch = torch.from_numpy(np.stack(next(batches))).to(DEVICE)
        my_ids = ids[(step - first_step) * local_batch:(step - first_step + 1) * local_batch]
        loss = train_step(a, stage, opt, batch, T, D, P, pp, rank, dp_group)
        total = torch.tensor([loss if (pp == P - 1 and tp == 0) else 0.0], dtype=torch.float64)
        dist.all_reduce(total)
        gathered = [torch.zeros(local_batch, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(gathered, torch.tensor(my_ids, dtype=torch.int64))
        step += 1
        if rank == 0:
            global_ids = [int(i) for d_ in range(D) for i in gathered[d_ * T]]
            log(a, job, {"step": step, "loss": float(total[0]), "ids": global_ids, "config": [T, P, D]})
            print("step %d/%d loss %.6f (T,P,D)=(%d,%d,%d)" % (step, a.steps, float(total[0]), T, P, D), flush=True)
        if step in a.save_at and step < a.steps:
            save(a, job, stage, opt, step, rank, world, dp, client, "periodic")
        if step == a.hold_at:
            hold(rank, step)

    save(a, job, stage, opt, step, rank, world, dp, client, "end" if step >= a.steps else "stop")
    stage.keep(opt)
    if rank == 0 and step >= a.steps and a.plot != "none":
        plot(a, job)


def plot(a, job):
    """The loss plot of the whole run (every launch's steps), next to a static run's when given."""
    from tenplex.tools.loss_plot import loss_plot

    png = a.plot or os.path.join(a.out, job + "-loss.png")
    loss_plot(os.path.join(a.out, job + ".jsonl"), png, a.compare)
    print("loss plot: %s" % png, flush=True)


def save(a, job, stage, opt, step, rank, world, dp, client, reason):
    """Saves this rank's state as generation ``step``; data-parallel replicas (dp > 0) seal empty."""
    T, P = int(os.environ.get("TENPLEX_TP", 1)), int(os.environ.get("TENPLEX_PP", 1))
    D = world // (T * P)
    saved = {"model": stage.state(), "optimizer": tenplex.optimizer_state_by_name(opt, stage.named())} \
        if dp == 0 else None  # data-parallel replicas hold the same state: rank dp=0 saves it
    tenplex.save(saved, job, step, rank, world, client=client)
    dist.barrier()
    if rank == 0:
        log(a, job, {"event": "saved", "step": step, "config": [T, P, D], "reason": reason})


def hold(rank, step):
    """Waits to be killed (the test that uses --hold-at kills the job here; nothing else wakes it)."""
    if rank == 0:
        print("holding at step %d" % step, flush=True)
    threading.Event().wait()
def train_step(a, stage, opt, batch, T, D, P, pp, rank, dp_group):
    """One step on this rank's part of the global batch; returns its share of the global mean loss."""
    x, y = batch[:, :-1], batch[:, 1:]
    opt.zero_grad(set_to_none=False)
    h_in = None
    if pp > 0:
        h_in = torch.empty(x.shape[0], x.shape[1], a.hidden, dtype=torch.float64, device=DEVICE)
        recv(h_in, src=rank - T * D)
        h_in.requires_grad_()
    out = stage(h_in, x)
    loss = 0.0
    if pp == P - 1:
        part = F.cross_entropy(out.reshape(-1, a.vocab), y.reshape(-1), reduction="sum") / (a.global_batch * a.seq)
        part.backward()
        loss = float(part.detach())
    else:
        send(out.detach(), dst=rank + T * D)
        g = torch.empty_like(out)
        recv(g, src=rank + T * D)
        out.backward(g)
    if pp > 0:
        send(h_in.grad, dst=rank - T * D)
    if dp_group is not None:
        for p in stage.named().values():
            all_reduce(p.grad, group=dp_group)
    opt.step()
    return loss


def log(a, job, record):
    record["time"] = time.time()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, job + ".jsonl"), "a") as f:
        f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    args = parse_args()
    if args.make_data:
        make_data(args)
    elif args.put_model_spec:
        tenplex.put_file("/job/%s/model.json" % os.environ.get("TENPLEX_JOB", "elastic-gpt"),
                         json.dumps(model_spec(args)))
    else:
        if not args.dataset:
            sys.exit("elastic_gpt.py: --dataset is required (see --help)")
        main(args)
