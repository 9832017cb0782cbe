"""Benchmark (a) of the streamed-sample buffers: a bursty production pattern (as in Melissa's
Fig. 2: a wave of P1 simulations, a gap, then a wave of P2) against a trainer that consumes faster
than the simulations produce. For each policy (fifo, firo, reservoir) on one daemon (--addr) it
reports batches per second delivered over time and how many times each sample was seen.

Producers are threads of this process (each its own HTTP session, pushing one sample per simulated
time step); the trainer is a separate process reading batches of --batch and spending --step-ms per
batch. Output: one table per policy and a summary, as Markdown."""

import argparse
import collections
import json
import os
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

from tenplex import streams  # noqa: E402


def simulation(job, addr, sim, steps, step_s, sample_bytes, start_at):
    p = streams.Producer(job, addr=addr, wait=5.0)
    pad = b"\0" * max(0, sample_bytes - 8)
    time.sleep(max(0.0, start_at - time.monotonic()))
    for t in range(steps):
        time.sleep(step_s)  # the simulation computes a time step
        p.push(struct.pack(">II", sim, t) + pad)
    p.close()


def produce(args, job):
    threads, sim = [], 0
    t0 = time.monotonic()
    for wave, (n, at) in enumerate([(args.p1, 0.0), (args.p2, args.gap_at)]):
        for _ in range(n):
            th = threading.Thread(target=simulation, args=(job, args.addr, sim, args.steps, args.step_s,
                                                           args.sample_bytes, t0 + at))
            th.start()
            threads.append(th)
            sim += 1
    for th in threads:
        th.join()


def consume(job, addr, batch, step_ms, out):
    times, ids = [], []
    print("ready", flush=True)  # imported and connected: the driver starts the producers now
    for b in streams.batches(job, 0, batch, addr=addr, wait=2.0):
        times.append(time.time())
        ids.extend(struct.unpack_from(">II", s) for s in b)
        time.sleep(step_ms / 1000.0)  # the training step
    with open(out, "w") as f:
        json.dump({"times": times, "ids": ids}, f)


def run(args, policy):
    job = "bursty-" + policy
    total = (args.p1 + args.p2) * args.steps
    streams.create_stream(job, policy, capacity=args.capacity, threshold=0 if policy == "fifo" else args.threshold,
                          producers=args.p1 + args.p2, max_sample_bytes=max(64, args.sample_bytes), addr=args.addr)
    out = os.path.join(args.tmp, job + ".json")
    trainer = subprocess.Popen([sys.executable, __file__, "--consume", job, "--addr", args.addr, "--batch",
                                str(args.batch), "--step-ms", str(args.step_ms), "--out", out],
                               stdout=subprocess.PIPE, text=True)
    if trainer.stdout.readline().strip() != "ready":
        raise SystemExit("trainer failed to start for " + policy)
    start = time.time()
    produce(args, job)
    produced = time.time()
    trainer.stdout.read()
    if trainer.wait() != 0:
        raise SystemExit("trainer failed for " + policy)
    with open(out) as f:
        r = json.load(f)
    streams.delete_stream(job, addr=args.addr)
    per_second = collections.Counter(int(t - start) for t in r["times"])
    seen = collections.Counter(map(tuple, r["ids"]))
    hist = collections.Counter(seen.values())
    return {"policy": policy, "total": total, "produced_s": produced - start, "end_s": r["times"][-1] - start,
            "batches": len(r["times"]), "per_second": per_second, "distinct": len(seen), "hist": hist}


def report(results):
    span = max(max(r["per_second"]) for r in results) + 1
    print("| second | " + " | ".join(r["policy"] for r in results) + " |")
    print("|---:|" + "---:|" * len(results))
    for s in range(span):
        print("| %d | %s |" % (s, " | ".join(str(r["per_second"].get(s, 0)) for r in results)))
    print()
    print("| policy | samples produced | distinct samples read | batches | production ended (s) | last batch (s) "
          "| batches/s | times each sample was seen (times: samples) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        hist = ", ".join("%d: %d" % (k, v) for k, v in sorted(r["hist"].items()))
        print("| %s | %d | %d | %d | %.1f | %.1f | %.1f | %s |" % (r["policy"], r["total"], r["distinct"], r["batches"],
              r["produced_s"], r["end_s"], r["batches"] / r["end_s"], hist))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default=os.environ.get("TENPLEX_ADDR", "http://127.0.0.1:20010"))
    ap.add_argument("--policies", default="fifo,firo,reservoir")
    ap.add_argument("--p1", type=int, default=100, help="simulations of the first wave")
    ap.add_argument("--p2", type=int, default=50, help="simulations of the second wave")
    ap.add_argument("--gap-at", type=float, default=8.0, help="seconds from the start to the second wave")
    ap.add_argument("--steps", type=int, default=10, help="time steps (samples) per simulation")
    ap.add_argument("--step-s", type=float, default=0.5, help="seconds per simulated time step")
    ap.add_argument("--sample-bytes", type=int, default=4096)
    ap.add_argument("--capacity", type=int, default=600)
    ap.add_argument("--threshold", type=int, default=100)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--step-ms", type=float, default=5.0, help="the trainer's time per batch")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("--consume")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.consume:
        consume(args.consume, args.addr, args.batch, args.step_ms, args.out)
        return
    results = [run(args, p) for p in args.policies.split(",")]
    report(results)


if __name__ == "__main__":
    main()
