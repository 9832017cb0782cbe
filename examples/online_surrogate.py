"""Online training of a small surrogate model from simulated producers, through a Reservoir buffer.

Simulations of the 1-D heat equation (explicit finite differences on N points, a random diffusivity
and random boundary temperatures per simulation) run as producers while the model trains: each
time step of each simulation is pushed as one sample (input: diffusivity, left and right boundary
temperature, time; output: the temperature field) into the job's stream in the tenplex daemon,
and nothing is written to disk. The trainer reads batches from its rank's Reservoir (Melissa's
training buffer: batches drawn uniformly among seen and unseen samples, so the trainer keeps
training while production is slower than consumption) through ``tenplex.streams.StreamDataset``,
and trains a small MLP surrogate (torch, CPU) until production has ended and the buffer is drained.
At the end it reports the validation loss on fresh simulations that were never streamed.

Run against a daemon (``bin/tenplexd --port 20010 --memory-limit 1g``):

    /usr/bin/python3 examples/online_surrogate.py --addr http://127.0.0.1:20010 \\
        --simulations 40 --concurrent 20 --steps 50

``--concurrent`` simulations run at a time (threads of this process, each its own producer) in
waves, as an ensemble launcher would start them.
"""

import argparse
import os
import sys
import threading
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))

from tenplex import streams  # noqa: E402

POINTS = 32
INPUTS = 4  # diffusivity, left temperature, right temperature, time


def simulate(seed, steps, points=POINTS):
    """Yields (inputs, field) for every time step of one heat-equation simulation."""
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.1, 0.5)
    left, right = rng.uniform(0.0, 1.0, size=2)
    u = np.zeros(points)
    dx, dt = 1.0 / (points - 1), 0.2 / (points - 1) ** 2  # dt * alpha / dx^2 <= 0.1: stable
    for t in range(steps):
        for _ in range(20):
            u[0], u[-1] = left, right
            u[1:-1] += alpha * dt / dx ** 2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u[0], u[-1] = left, right
        yield np.array([alpha, left, right, (t + 1) / steps], dtype=np.float32), u.astype(np.float32)


def producer(job, addr, seed, steps, step_s):
    with streams.Producer(job, addr=addr, wait=5.0) as p:
        for x, y in simulate(seed, steps):
            time.sleep(step_s)  # a real solver would take this long per time step
            p.push(np.concatenate([x, y]))


def launch(args):
    """Runs the simulations in waves of ``--concurrent`` (the ensemble launcher)."""
    for first in range(0, args.simulations, args.concurrent):
        wave = [threading.Thread(target=producer, args=(args.job, args.addr, seed, args.steps, args.step_s))
                for seed in range(first, min(first + args.concurrent, args.simulations))]
        for t in wave:
            t.start()
        for t in wave:
            t.join()


def decode(sample):
    v = torch.from_numpy(np.frombuffer(sample, dtype=np.float32).copy())
    return v[:INPUTS], v[INPUTS:]


def validation_loss(model, steps):
    xs, ys = zip(*[s for seed in range(10_000, 10_005) for s in simulate(seed, steps)])
    with torch.no_grad():
        pred = model(torch.from_numpy(np.stack(xs)))
        return torch.nn.functional.mse_loss(pred, torch.from_numpy(np.stack(ys))).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--addr", default=os.environ.get("TENPLEX_ADDR", "http://127.0.0.1:20010"))
    ap.add_argument("--job", default="surrogate")
    ap.add_argument("--simulations", type=int, default=40)
    ap.add_argument("--concurrent", type=int, default=20)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--step-s", type=float, default=0.02, help="simulated seconds per solver time step")
    ap.add_argument("--capacity", type=int, default=1000)
    ap.add_argument("--threshold", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()

    torch.manual_seed(0)
    streams.create_stream(args.job, "reservoir", capacity=args.capacity, threshold=args.threshold,
                          producers=args.simulations, addr=args.addr)
    sims = threading.Thread(target=launch, args=(args,))
    sims.start()
    model = torch.nn.Sequential(torch.nn.Linear(INPUTS, 128), torch.nn.Tanh(), torch.nn.Linear(128, 128),
                                torch.nn.Tanh(), torch.nn.Linear(128, POINTS))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.utils.data.DataLoader(streams.StreamDataset(args.job, 0, batch_size=args.batch, addr=args.addr,
                                                             decode=decode), batch_size=args.batch)
    started, batches = time.time(), 0
    for x, y in data:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        batches += 1
        if batches % 200 == 0:
            print("batch %5d  %.1f s  loss %.5f" % (batches, time.time() - started, loss.item()), flush=True)
    sims.join()
    status = streams.stream_status(args.job, addr=args.addr)["local"][0]
    print("trained on %d batches in %.1f s; %d samples produced, %d draws; times samples were seen: %s"
          % (batches, time.time() - started, status["pushed"], status["delivered"], status["reads_left"]))
    print("validation loss on unseen simulations: %.5f" % validation_loss(model, args.steps))
    streams.delete_stream(args.job, addr=args.addr)


if __name__ == "__main__":
    main()
