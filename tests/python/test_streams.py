"""Streamed training samples against real daemons (TENPLEX_ADDRS: three daemon URLs, comma
separated), with producer and trainer processes (stream_worker.py):

- each policy against its definition on one rank: FIFO reads in arrival order, each once; FIRO reads
  each once in a random order, only above its threshold until production ends; Reservoir reads
  never block past the threshold, repeats samples, evicts only seen ones, and drains at the end;
- back-pressure: a push into a full buffer is a 429 with Retry-After (never a silent drop); a sample
  over the limit is a 413, a bad policy a 400;
- a resize: producers push through all three daemons while two trainers read ranks 0 and 1 and
  stop; the buffers are re-partitioned onto three ranks, three new trainers read until the stream
  ends: with FIFO and FIRO every sample is read exactly once, with Reservoir none is lost.
Prints OK at the end; any failure raises."""

import collections
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import requests  # noqa: E402

from tenplex import streams  # noqa: E402

ADDRS = os.environ["TENPLEX_ADDRS"].split(",")
HOSTS = [a.split("://")[-1] for a in ADDRS]
WORKER = os.path.join(HERE, "stream_worker.py")
TMP = tempfile.mkdtemp()


START = time.monotonic()


def log(what):
    print("%6.1f s %s" % (time.monotonic() - START, what), flush=True)


def spawn(*args):
    return subprocess.Popen([sys.executable, WORKER] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_ok(p):
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0 and out.strip().endswith("OK"), out
    return out


def ids_of(batch):
    return [struct.unpack(">Q", s)[0] for s in batch]


def produced(job, specs, close=False):
    """One process of producers, each (addr, first, count)."""
    return spawn("produce", job, 1 if close else 0, *["%s,%d,%d" % s for s in specs])


def trained(job, size, ranks, max_batches=0):
    """One process of trainers, each (addr, rank); result() answers the ids read per rank."""
    out = os.path.join(TMP, "%s-%d.json" % (job, time.monotonic_ns()))
    return spawn("train", job, size, max_batches, out, *["%s,%d" % r for r in ranks]), out


def result(p_out, rank=None):
    p, out = p_out
    wait_ok(p)
    with open(out) as f:
        by_rank = json.load(f)
    return by_rank[str(rank)] if rank is not None else [i for ids in by_rank.values() for i in ids]


# ---- FIFO: arrival order, each once; a full buffer answers 429 with Retry-After
streams.create_stream("fifo1", "fifo", capacity=50, addr=ADDRS[0])
wait_ok(produced("fifo1", [(ADDRS[0], 0, 50)]))
r = requests.post(ADDRS[0] + "/api/v1/jobs/fifo1/streams/samples?wait=0", data=b"x" * 8,
                  headers={"Content-Type": "application/octet-stream"})
assert r.status_code == 429 and r.headers["Retry-After"] == "1", (r.status_code, r.headers)
assert r.headers["X-Tenplex-Error-Code"] == "too_many_requests"
st = streams.stream_status("fifo1", addr=ADDRS[0])["local"][0]
assert st["population"] == 50 and st["refused"] == 1, st
reader = trained("fifo1", 7, [(ADDRS[0], 0)])
streams.end_stream("fifo1", addr=ADDRS[0])
got = result(reader)
assert got == list(range(50)), got

log("bad input")
# ---- bad input: a clear 4xx, nothing changes
big = requests.post(ADDRS[0] + "/api/v1/jobs/fifo1/streams/samples", data=b"x" * (1 << 20 + 1),
                    headers={"Content-Type": "application/octet-stream"})
assert big.status_code == 413 and big.headers["X-Tenplex-Error-Code"] == "too_large", big.status_code
bad = requests.post(ADDRS[0] + "/api/v1/jobs/bad/streams", json={"policy": "lifo", "capacity": 4})
assert bad.status_code == 400 and "fifo, firo or reservoir" in bad.text, bad.text
assert requests.get(ADDRS[0] + "/api/v1/jobs/bad/streams").status_code == 404

log("FIRO")
# ---- FIRO: nothing below the threshold, each once in a random order, drained at the end
streams.create_stream("firo1", "firo", capacity=200, threshold=40, addr=ADDRS[1])
wait_ok(produced("firo1", [(ADDRS[1], 0, 44)]))
batch, ended = streams.read_batch("firo1", 0, 5, wait=0.2, addr=ADDRS[1])
assert batch == [] and not ended  # 44 < threshold 40 + 5
wait_ok(produced("firo1", [(ADDRS[1], 44, 56)]))
reader = trained("firo1", 5, [(ADDRS[1], 0)], max_batches=12)
first = result(reader)
assert len(first) == 60 and len(set(first)) == 60, first
st = streams.stream_status("firo1", addr=ADDRS[1])["local"][0]
assert st["population"] == 40, st  # reads stop at the threshold
streams.end_stream("firo1", addr=ADDRS[1])
rest = result(trained("firo1", 5, [(ADDRS[1], 0)]))
assert sorted(first + rest) == list(range(100)), sorted(first + rest)
assert first != sorted(first)

log("Reservoir")
# ---- Reservoir: full of unseen blocks producers; reads repeat samples; only seen ones evicted
streams.create_stream("res1", "reservoir", capacity=30, threshold=10, addr=ADDRS[2])
wait_ok(produced("res1", [(ADDRS[2], 0, 30)]))
r = requests.post(ADDRS[2] + "/api/v1/jobs/res1/streams/samples?wait=0", data=b"y" * 8,
                  headers={"Content-Type": "application/octet-stream"})
assert r.status_code == 429, r.status_code  # full of unseen samples
many = result(trained("res1", 10, [(ADDRS[2], 0)], max_batches=20))  # never blocks: 200 draws from 30
assert len(many) == 200 and len(set(many)) == 30
wait_ok(produced("res1", [(ADDRS[2], 30, 30)]))  # evicts seen ones
st = streams.stream_status("res1", addr=ADDRS[2])["local"][0]
assert st["population"] == 30 and st["evicted"] == 30 and st["unseen"] == 30, st
assert sum(st["reads_left"].values()) == 30 and "0" not in st["reads_left"], st
streams.end_stream("res1", addr=ADDRS[2])
last = result(trained("res1", 8, [(ADDRS[2], 0)]))
assert set(range(30, 60)) <= set(last) and len(last) == len(set(last)) == 30, last
seen = collections.Counter(many + last)
assert set(seen) == set(range(60)), sorted(set(range(60)) - set(seen))
metrics = requests.get(ADDRS[2] + "/metrics").text
assert 'tenplex_stream_population{job="res1",rank="0",policy="reservoir",} 0.0' in metrics, metrics[-2000:]
assert 'tenplex_stream_sample_reads{job="res1",rank="0",where="left"' in metrics


log("a resize")
# ---- a resize from 2 to 3 ranks while producers push through every daemon (three jobs at once)
def start_resize(policy, n_per_producer=150):
    job = "resize-" + policy
    streams.create_stream(job, policy, capacity=200, threshold=0 if policy == "fifo" else 20,
                          ranks=HOSTS[:2], daemons=HOSTS, producers=4, addr=ADDRS[0])
    producers = produced(job, [(ADDRS[i % 3], i * n_per_producer, n_per_producer) for i in range(4)], close=True)
    old = trained(job, 16, [(ADDRS[(rank + 1) % 3], rank) for rank in range(2)], max_batches=10)
    return job, producers, old, 4 * n_per_producer


def finish_resize(job, producers, old, total):
    before = result(old)  # the old trainers stop (as at a stop flag)
    streams.repartition(job, [HOSTS[2], HOSTS[0], HOSTS[2]], addr=ADDRS[1])
    new = trained(job, 16, [(ADDRS[rank % 3], rank) for rank in range(3)])
    wait_ok(producers)
    return before, result(new), total


runs = {policy: start_resize(policy) for policy in ("fifo", "firo", "reservoir")}
for policy, run in runs.items():
    log("resize " + policy)
    before, after, total = finish_resize(*run)
    counts = collections.Counter(before + after)
    assert sorted(counts) == list(range(total)), (policy, sorted(set(range(total)) - set(counts)))  # none lost
    assert len(before) == 2 * 10 * 16, len(before)
    if policy != "reservoir":
        assert all(v == 1 for v in counts.values()), (policy, [k for k, v in counts.items() if v > 1])
    else:
        log("reservoir: samples read %.1f times on average, at most %d" % (sum(counts.values()) / total,
                                                                         max(counts.values())))
print("OK")
