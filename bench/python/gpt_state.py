"""A GPT-like training state (fp32 weights plus Adam's two moments) of a given size, and timing of
device work, shared by bench/checkpoint-bench and bench/gpu-check."""

import statistics
import time

import torch


def gpt_state(size_bytes, hidden, vocab, device):
    """Weights and Adam moments of a GPT-like model whose total is about ``size_bytes`` (fp32);
    ``hidden=None``: the widest of the GPT-2/3 widths that still gives 12 layers or more."""
    params = size_bytes // 12  # weight + exp_avg + exp_avg_sq, 4 bytes each
    if hidden is None:
        fits = [h for h in (256, 512, 768, 1024, 1536, 2048, 4096)
                if params - (vocab + 2048) * h >= 12 * (12 * h * h + 13 * h)]
        hidden = fits[-1] if fits else 256
    per_layer = 12 * hidden * hidden + 13 * hidden
    layers = max(1, round((params - (vocab + 2048) * hidden) / per_layer))
    shapes = {"wte": (vocab, hidden), "wpe": (2048, hidden), "ln_f.weight": (hidden,), "ln_f.bias": (hidden,)}
    for i in range(layers):
        p = "h.%d." % i
        shapes.update({p + "ln_1.weight": (hidden,), p + "ln_1.bias": (hidden,),
                       p + "attn.qkv.weight": (3 * hidden, hidden), p + "attn.qkv.bias": (3 * hidden,),
                       p + "attn.proj.weight": (hidden, hidden), p + "attn.proj.bias": (hidden,),
                       p + "ln_2.weight": (hidden,), p + "ln_2.bias": (hidden,),
                       p + "mlp.fc.weight": (4 * hidden, hidden), p + "mlp.fc.bias": (4 * hidden,),
                       p + "mlp.proj.weight": (hidden, 4 * hidden), p + "mlp.proj.bias": (hidden,)})
    g = torch.Generator(device=device).manual_seed(1)  # made where it lives: fast on a GPU

    def randn(s):
        return torch.randn(s, generator=g, device=device)
    model = {k: randn(s) for k, s in shapes.items()}
    opt = {i: {"step": torch.tensor(10.0), "exp_avg": randn(s), "exp_avg_sq": randn(s).abs_()}
           for i, s in enumerate(shapes.values())}
    return {"model": model, "optimizer": {"state": opt, "param_groups": [{"lr": 1e-4, "params": list(opt)}]},
            "iteration": 10}


def tensors(state):
    out = []

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, torch.Tensor):
            out.append(x)
    walk(state)
    return out


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, rounds, device, before=None):
    times = []
    for _ in range(rounds):
        if before:
            before()
        sync(device)
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times)
