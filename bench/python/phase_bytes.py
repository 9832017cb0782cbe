"""The bytes each phase of a reconfiguration of examples/elastic_gpt.py touches, from the model's
arguments and the two configurations, and the machine's memory-copy floor (bench/reconfigure-downtime):

* save: what the saving ranks copy into the daemon's memory: every partition once (data-parallel
  replicas do not save);
* move: what the move writes: every partition of the new configuration once (replicas share it), less
  what a keep links without a copy (a partition that is unchanged, none in the bench's schedule);
* load: what the ranks copy out: every rank's partition, replicas included;
and the floor: copying those bytes into memory that is already touched (numpy, median of 5 copies of
256 MiB), the floor bench/checkpoint-bench measures for a save."""

import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))

import elastic_gpt  # noqa: E402

STATE_COPIES = 3  # parameters and Adam's two moments, all float64


def model_args(argv):
    """The example's arguments for a model given as its command-line flags (e.g. --hidden 512 ...)."""
    return elastic_gpt.parse_args(["--dataset", "unused"] + list(argv))


def partition_bytes(a, tp, pp, T, P):
    """Bytes of the state one rank of (tp, pp) under (T, P) holds: its shards and their moments."""
    per = a.layers // P
    layers = range(pp * per, (pp + 1) * per)
    n = 0
    for name, (shape, _, part) in elastic_gpt.global_params(a).items():
        if name.startswith("layers."):
            mine = int(name.split(".")[1]) in layers
        elif name in ("embed.weight", "pos.weight"):
            mine = pp == 0
        else:
            mine = pp == P - 1
        if mine:
            n += int(np.prod(elastic_gpt.local_shape(shape, part, T))) * 8 * STATE_COPIES
    return n


def phase_bytes(a, old, new):
    """{save, move, load} bytes of the change from ``old`` to ``new`` ((T, P, D) tuples)."""
    def once(T, P):
        return sum(partition_bytes(a, t, p, T, P) for t in range(T) for p in range(P))
    return {"save": once(old[0], old[1]), "move": once(new[0], new[1]), "load": once(new[0], new[1]) * new[2]}


def state_bytes(a):
    return phase_bytes(a, (1, 1, 1), (1, 1, 1))["save"]


def layers_for(gb, base_argv):
    """The smallest even layer count (so that P = 2 divides it) whose state is at least ``gb`` GB."""
    layers = 2
    while state_bytes(model_args(list(base_argv) + ["--layers", str(layers)])) < gb * 1e9:
        layers += 2
    return layers


def copy_floor_gbps(size=256 << 20, rounds=5):
    """GB/s of a copy into already-touched memory (the floor of a phase that copies its bytes)."""
    src = np.random.default_rng(0).integers(0, 255, size, dtype=np.uint8)
    dst = np.zeros_like(src)
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t)
    return size / statistics.median(times) / 1e9


if __name__ == "__main__":  # layers_for GB FLAGS...: prints the layer count
    print(layers_for(float(sys.argv[1]), sys.argv[2:]))
