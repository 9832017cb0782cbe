"""Benchmark (b): the rehearsal buffer's overhead on a training step at W data-parallel ranks.

W trainer processes (one per daemon, started together) run the same loop with and without the
rehearsal buffer, rounds interleaved. A step is: [augment the minibatch of b samples with the r
representatives drawn during the previous step; offer this minibatch's candidates and start the next
draw in the background (section 5.4's order)], then the step's compute. The compute stands for a GPU step: the host waits ``--step-ms`` (time.sleep), so the
client's background thread and the daemons have the host's CPUs as they would during a GPU step.
Each sample is a float32 input of ``--shape``, an int64 label and float32 logits of K classes (the
extra part of dark experience replay). The overhead is the mean step time with the buffer over the
mean without, minus one; the augmented minibatch's larger compute (b + r samples, inherent to
rehearsal) is not part of it. ``--warm-runs`` runs with the buffer first, not counted: the daemons'
JIT warm-up, a one-time cost per daemon process.

Usage (bench/rehearsal-overhead.sh starts the daemons): rehearsal_step.py --daemons 0=host:port,...
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))

import numpy as np  # noqa: E402


def trainer(a):
    import tenplex
    from tenplex.rehearsal import RehearsalBuffer
    c = tenplex.Client(a.addr)
    shape = tuple(int(s) for s in a.shape.split(","))
    rng = np.random.default_rng(a.rank)
    pool = [rng.standard_normal((a.b,) + shape, dtype=np.float32) for _ in range(4)]
    buf = None
    if a.mode == "on":
        buf = RehearsalBuffer(a.job, a.rank, classes=a.classes, per_class=a.per_class, candidates=a.c, batch=a.b,
                              seed=1, representatives=a.r, client=c, ahead=a.ahead)
    while time.time() < a.start:
        time.sleep(0.001)
    times, sizes = [], []
    for step in range(a.warmup + a.steps):
        t = time.perf_counter()
        x = pool[step % len(pool)]
        y = rng.integers(0, a.classes, a.b)
        logits = np.zeros((a.b, a.classes), dtype=np.float32)
        if buf is not None:
            m = (x, y, logits)
            x, y, logits = buf.augment(x, y, logits)  # waits for the draw started during the previous step
            buf.update(*m[:2], extra=m[2])  # candidates in, next draw started: both overlap this step's compute
        time.sleep(a.step_ms / 1000.0)  # the step's compute (a GPU step: the host waits)
        if step >= a.warmup:
            times.append(time.perf_counter() - t)
            sizes.append(len(x))
    waited = 0.0
    if buf is not None:
        waited = buf.waited
        buf.close()
    print(json.dumps({"rank": a.rank, "mean": float(np.mean(times)), "p50": float(np.median(times)),
                      "p95": float(np.percentile(times, 95)), "batch": float(np.mean(sizes)), "waited": waited}))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(a, daemons, mode, step_ms, job):
    start = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--trainer", "--addr", addr, "--job", job,
                               "--rank", str(rank), "--mode", mode, "--step-ms", str(step_ms), "--start", str(start),
                               "--steps", str(a.steps), "--warmup", str(a.warmup), "--b", str(a.b), "--c", str(a.c),
                               "--r", str(a.r), "--classes", str(a.classes), "--per-class", str(a.per_class),
                               "--shape", a.shape, "--ahead", str(a.ahead)], stdout=subprocess.PIPE, text=True)
             for rank, addr in enumerate(daemons)]
    out = []
    for p in procs:
        o, _ = p.communicate(timeout=600)
        assert p.returncode == 0, o
        out.append(json.loads(o.strip().splitlines()[-1]))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--daemons", help="worker=host:port,... (the driver)")
    p.add_argument("--trainer", action="store_true")
    p.add_argument("--addr")
    p.add_argument("--job", default="bench")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--mode", default="on")
    p.add_argument("--step-ms", type=float, default=50)
    p.add_argument("--step-list", default="50,100")
    p.add_argument("--start", type=float, default=0)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--b", type=int, default=64)
    p.add_argument("--c", type=int, default=8)
    p.add_argument("--r", type=int, default=16)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--per-class", type=int, default=100)
    p.add_argument("--shape", default="3,32,32")
    p.add_argument("--ahead", type=int, default=1, help="draws in flight (RehearsalBuffer's ahead)")
    p.add_argument("--warm-runs", type=int, default=1, help="runs with the buffer before the rounds, not counted")
    a = p.parse_args()
    if a.trainer:
        return trainer(a)
    daemons = [d.split("=", 1)[1] for d in a.daemons.split(",")]
    print("W=%d ranks, b=%d, c=%d, r=%d, K=%d, S=%d, input %s float32, %d draw(s) in flight, load average %s" % (
        len(daemons), a.b, a.c, a.r, a.classes, a.per_class, a.shape, a.ahead, loadavg()), flush=True)
    steps = [float(s) for s in a.step_list.split(",")]
    for i in range(a.warm_runs):  # the daemons' JIT warm-up (once per daemon process): not counted
        res = run(a, daemons, "on", steps[0], "bench-warm-%d" % i)
        print("warm-up run %d (not counted): mean %.2f ms, waited %.3f s per rank" % (
            i, 1e3 * float(np.mean([x["mean"] for x in res])), float(np.mean([x["waited"] for x in res]))), flush=True)
    for step_ms in steps:
        means = {"off": [], "on": []}
        for rnd in range(a.rounds):
            for mode in ("off", "on"):
                res = run(a, daemons, mode, step_ms, "bench-%s-%g-%d" % (mode, step_ms, rnd))
                means[mode].append(float(np.mean([x["mean"] for x in res])))
                print("step %g ms, round %d, %s: mean %.2f ms, p95 %.2f ms, batch %.1f, waited %.3f s per rank" % (
                    step_ms, rnd, mode, 1e3 * means[mode][-1], 1e3 * float(np.mean([x["p95"] for x in res])),
                    float(np.mean([x["batch"] for x in res])), float(np.mean([x["waited"] for x in res]))), flush=True)
        off, on = float(np.median(means["off"])), float(np.median(means["on"]))
        print("RESULT step %g ms: without %.2f ms, with %.2f ms, overhead %.2f%% (load average %s)" % (
            step_ms, 1e3 * off, 1e3 * on, 100 * (on / off - 1), loadavg()), flush=True)


if __name__ == "__main__":
    main()
