"""Two trainers committing the same rank at once through shared memory, against a real daemon
(TENPLEX_ADDR): a zombie trainer and its replacement save rank 0 of job ``race`` at steps s and s+1
at the same instant, ROUNDS times (argv[1], default 150). Every commit the daemon answers 200 must
have sealed exactly what that trainer wrote: its generation's tensor holds the writer's bytes, not
the other trainer's. A commit may be refused (409: its step is not newer than a complete generation);
that is fine. Prints the counts and OK at the end; any failure raises."""

import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import shared_memory as shm  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
JOB = "race"
CONFIG = {"tp": 1, "pp": 1, "dp": 1, "devicesPerWorker": 1}
N = 1 << 16  # f32 elements: 256 KiB per save
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 150

check = tenplex.Client(ADDR)
assert shm.available(check), "the daemon has no usable shared memory"


def state(step):
    return {"w": torch.full((N,), float(step))}


def commit(client, step, barrier, out):
    barrier.wait()
    try:
        r = tenplex.save(state(step), job=JOB, step=step, rank=0, world=1, config=CONFIG, client=client,
                         shared=True)
        out[step] = ("ok", r)
    except tenplex.TenplexError as e:
        out[step] = ("refused", e)


def sealed_bytes(step):
    base = "/job/%s/generations/%d/0" % (JOB, step)
    listing = check.request("GET", "/api/v1/dirs%s?recursive=true" % base).json()["entries"]
    tensors = [e["path"] for e in listing if e["type"] == "tensor"]
    assert len(tensors) == 1, listing
    return check.request("GET", "/api/v1/tensors" + tensors[0]).content


clients = [tenplex.Client(ADDR), tenplex.Client(ADDR)]
ok = refused = 0
for r in range(ROUNDS):
    s = 10 + 2 * r
    out = {}
    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=commit, args=(clients[i], s + i, barrier, out)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for step, (how, answer) in sorted(out.items()):
        if how == "refused":
            assert answer.status == 409, (step, answer)
            refused += 1
            continue
        ok += 1
        got = sealed_bytes(step)
        want = state(step)["w"].numpy().tobytes()
        if got != want:
            other = torch.frombuffer(bytearray(got), dtype=torch.float32)[0].item()
            raise AssertionError("round %d: the commit of step %d was answered 200 but its generation holds the "
                                 "bytes of step %s" % (r, step, other))
print("rounds=%d sealed=%d refused=%d" % (ROUNDS, ok, refused))
assert ok >= ROUNDS, (ok, refused)
print("OK")
