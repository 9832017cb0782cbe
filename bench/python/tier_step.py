"""Step-time overhead of checkpoint tiers (L2 partner copies, L3 parity) on a training-like loop.

Driver (``tier_step.py --daemons 0=127.0.0.1:P0,1=...``): for each round and each case (no tiers,
``{"partners": 1}``, ``{"groupSize": k, "parity": 1}``) it sets the job's tiers on every daemon,
starts one trainer process per rank (rank r talks to worker r's daemon), polls every daemon's
``generations`` every 20 ms to see when each saved step reaches the case's level, and at the end
prints per case the medians and their ratios to the no-tier case, and per save the time the steps
after it took beyond the median step without a save (what the background work cost training).

Trainer (``--rank r``): a fixed compute step (``--matmuls`` products of two ``--size`` square
float32 matrices, one torch thread) followed by a gloo all_reduce of one float (the step's
synchronisation, as data-parallel training has); every ``--every`` steps a blocking
``tenplex.save`` of a state of ``--mib`` MiB (4 float32 tensors, a slice changed every step), then a
barrier. Times are ``time.monotonic()`` (one clock for all processes of the host)."""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))


def trainer(a):
    import torch
    import torch.distributed as dist
    import tenplex

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.rdzv, rank=a.rank, world_size=a.world)
    n = (a.mib << 20) // 4 // 4
    state = {"p%d" % i: torch.full((n,), float(a.rank * 10 + i)) for i in range(4)}
    x = torch.randn(a.size, a.size)
    w = torch.randn(a.size, a.size) / a.size
    one = torch.zeros(1)
    steps, saves = [], []
    config = {"tp": 1, "pp": 1, "dp": a.world, "devicesPerWorker": 1}
    for i in range(a.steps):
        t0 = time.monotonic()
        y = x
        for _ in range(a.matmuls):
            y = torch.tanh(y @ w)
        state["p%d" % (i % 4)][: a.size] += y[0]
        dist.all_reduce(one)
        steps.append((t0, time.monotonic()))
        if (i + 1) % a.every == 0:
            s0 = time.monotonic()
            tenplex.save(state, job=a.job, step=i + 1, rank=a.rank, world=a.world, config=config, addr=a.addr)
            saves.append((i + 1, s0, time.monotonic()))
            dist.barrier()
    tenplex.end_process_group()
    with open(a.out, "w") as f:
        json.dump({"steps": steps, "saves": saves}, f)


def call(addr, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request("http://%s%s" % (addr, path), data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read()
    return json.loads(raw) if raw else None


def poll(addrs, job, level, seen, stop):
    """Records, per (worker, step), the first time the step lists ``level`` on that daemon."""
    while not stop.is_set():
        for w, addr in addrs.items():
            try:
                gens = call(addr, "GET", "/api/v1/jobs/%s/generations" % job).get("generations", [])
            except Exception:  # the job does not exist yet
                continue
            now = time.monotonic()
            for g in gens:
                if level in g.get("levels", []):
                    seen.setdefault((w, g["step"]), now)
        stop.wait(0.02)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_case(a, addrs, job, tiers, level, tmp):
    for addr in addrs.values():
        call(addr, "PUT", "/api/v1/jobs/%s/tiers" % job, tiers)
    seen, stop = {}, threading.Event()
    poller = threading.Thread(target=poll, args=(addrs, job, level, seen, stop), daemon=True)
    poller.start()
    procs, outs = [], []
    rdzv = free_port()
    for r in range(len(addrs)):
        out = os.path.join(tmp, "%s-%d.json" % (job, r))
        outs.append(out)
        procs.append(subprocess.Popen([sys.executable, __file__, "--rank", str(r), "--world", str(len(addrs)),
                                       "--addr", addrs[r], "--job", job, "--out", out, "--rdzv", str(rdzv),
                                       "--steps", str(a.steps), "--every", str(a.every), "--mib", str(a.mib),
                                       "--size", str(a.size), "--matmuls", str(a.matmuls)]))
    try:
        for p in procs:
            if p.wait() != 0:
                raise SystemExit("trainer %d failed (%s)" % (p.pid, job))
    finally:
        for p in procs:  # the trainers this driver started, when it stops early
            if p.poll() is None:
                p.terminate()
                p.wait()
    last = a.steps - a.steps % a.every
    deadline = time.monotonic() + 60
    while any((w, last) not in seen for w in addrs) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    poller.join()
    ranks = []
    for out in outs:
        with open(out) as f:
            ranks.append(json.load(f))
    for addr in addrs.values():
        call(addr, "DELETE", "/api/v1/dirs/job/%s?recursive=true" % job)
    return summarize(a, ranks, seen, list(addrs))


def summarize(a, ranks, seen, workers):
    """Per step, the slowest rank's time; steps split into those right after a save (the first step
    after it, and every later one that starts before the level is in place on every daemon) and the
    others (the first 2 steps are warm-up)."""
    step_ms = [max(r["steps"][i][1] - r["steps"][i][0] for r in ranks) * 1e3 for i in range(a.steps)]
    save_ms, in_place_ms, after, never, per_save = [], [], set(), 0, []
    for j, (step, _, _) in enumerate(ranks[0]["saves"]):
        end = max(r["saves"][j][2] for r in ranks)
        save_ms.append(max(r["saves"][j][2] - r["saves"][j][1] for r in ranks) * 1e3)
        placed = max(seen.get((w, step), float("inf")) for w in workers)
        if placed == float("inf"):
            never += 1  # not seen in place on every daemon before its generation was dropped
        else:
            in_place_ms.append((placed - end) * 1e3)
        mine = [i for i in range(step, min(step + a.every, a.steps))  # up to the next save
                if i == step or ranks[0]["steps"][i][0] < placed]
        after.update(mine)
        per_save.append(mine)
    plain = [step_ms[i] for i in range(2, a.steps) if i not in after]
    lost = [sum(step_ms[i] - med(plain) for i in mine) for mine in per_save if mine]
    return {"plain": plain, "after": [step_ms[i] for i in sorted(after)], "save": save_ms,
            "inPlace": in_place_ms, "never": [1] * never, "lost": lost}


CASES = [("none", {"partners": 0, "groupSize": 0}, "memory"),
         ("L2 partners=1", {"partners": 1, "groupSize": 0}, "partners"),
         ("L3 k=%d m=1", None, "erasure")]


def driver(a):
    addrs = {}
    for part in a.daemons.split(","):
        w, addr = part.split("=")
        addrs[int(w)] = addr
    k = a.group or min(3, len(addrs) - 1)
    cases = [(n % k if "%d" in n else n, t or {"partners": 0, "groupSize": k, "parity": 1}, lv)
             for n, t, lv in CASES]
    tmp = a.tmp
    print("%d ranks (one daemon each), %d MiB state per rank, %d steps, save every %d, %d x %dx%d matmul per step"
          % (len(addrs), a.mib, a.steps, a.every, a.matmuls, a.size, a.size), flush=True)
    for name, tiers, level in cases:  # warm-up: JIT of the daemons, torch start-up; not reported
        run_case(a, addrs, "warm%d" % cases.index((name, tiers, level)), tiers, level, tmp)
    total = {name: {"plain": [], "after": [], "save": [], "inPlace": [], "never": [], "lost": []} for name, _, _ in cases}
    for rnd in range(a.rounds):
        for c, (name, tiers, level) in enumerate(cases):
            got = run_case(a, addrs, "r%dc%d" % (rnd, c), tiers, level, tmp)
            for key in total[name]:
                total[name][key] += got[key]
            print("round %d %-14s step %.1f ms, after save %.1f ms, save %.1f ms, in place %.0f ms" % (
                rnd, name, med(got["plain"]), med(got["after"]), med(got["save"]), med(got["inPlace"])), flush=True)
    report(total, cases)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def report(total, cases):
    base = total[cases[0][0]]
    print("\n| tiers | step, no save | step after a save | save (blocking) | in place after save "
          "| steps after a save: time over a plain step, per save | steps no save / after / saves (never in place) |")
    print("|---|---|---|---|---|---|---|")
    for name, _, _ in cases:
        t = total[name]
        print("| %s | %.1f ms (x%.2f) | %.1f ms (x%.2f) | %.1f ms (x%.2f) | %s | %.0f ms | %d / %d / %d (%d) |" % (
            name, med(t["plain"]), med(t["plain"]) / med(base["plain"]), med(t["after"]),
            med(t["after"]) / med(base["after"]), med(t["save"]), med(t["save"]) / med(base["save"]),
            "-" if name == "none" else "%.0f ms" % med(t["inPlace"]), med(t["lost"]), len(t["plain"]), len(t["after"]),
            len(t["save"]), len(t["never"])))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--daemons", help="worker=host:port,... (driver)")
    p.add_argument("--rank", type=int, help="run as this trainer rank")
    p.add_argument("--world", type=int)
    p.add_argument("--addr")
    p.add_argument("--job")
    p.add_argument("--out")
    p.add_argument("--rdzv", type=int)
    p.add_argument("--tmp", default="/tmp")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--group", type=int, default=0, help="L3 group size k (default min(3, W-1))")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--matmuls", type=int, default=2)
    a = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # runs the trainers' clean-up
    if a.rank is not None:
        trainer(a)
    else:
        driver(a)


if __name__ == "__main__":
    main()
