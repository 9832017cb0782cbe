"""Streamed samples across a real resource change (run by StreamResizeIT; three daemons, one per
worker, started with --peers): for each policy (three jobs at once) a stream over two data-parallel
ranks (workers 0 and 1) gets 600 samples from four producers that push through all three daemons;
a resource change to (T,P,D) = (1,1,3) on workers 0 to 2 is posted for step 10 before training
starts; two trainer processes read their rank's batches from their own worker's daemon, ask it after
every step whether to stop (tenplex.should_stop), and save at step 10; the change waits for that
save, reconfigures, and on commit re-partitions the buffers over the three new ranks (its events
say so, and every daemon's stream names the new ranks); three new trainers read until production
has ended. With FIFO and FIRO every sample is read exactly once across the change, with Reservoir
none is lost.

Usage: stream_resize.py <daemon-url> x 3"""

import collections
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import tenplex  # noqa: E402
from tenplex import streams  # noqa: E402

WORKER = os.path.join(HERE, "stream_worker.py")
TMP = tempfile.mkdtemp()
STEPS, BATCH, PER_PRODUCER = 10, 16, 150
MODEL = json.dumps({"layers": 1, "values": [], "tensors": [
    {"name": "w", "dtype": "f32", "shape": [4], "partition": {"kind": "replicated"}, "stage": "first"}]})


def spawn(*args):
    return subprocess.Popen([sys.executable, WORKER] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


URLS = []


def ids_read(p, out, job, producers):
    try:
        text, _ = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        text = p.communicate()[0] + "\n(timed out) " + json.dumps(
            {u: streams.stream_status(job, addr=u) for u in URLS})
        if producers.poll() is not None:
            text += "\nproducers ended with %d: %s" % (producers.returncode, producers.communicate()[0])
    assert p.returncode == 0 and text.strip().endswith("OK"), text
    with open(out) as f:
        return json.load(f)


def start(urls, hosts, policy):
    """The job's stream on workers 0 and 1, its producers, its resource change, its old trainers."""
    job = "rz-" + policy
    for url in urls:
        tenplex.put_file("/job/%s/model.json" % job, MODEL, tenplex.Client(url))
    streams.create_stream(job, policy, capacity=200, threshold=0 if policy == "fifo" else 20, ranks=hosts[:2],
                          daemons=hosts, producers=4, addr=urls[0])
    producers = spawn("produce", job, 1, *["%s,%d,%d" % (urls[i % 3], i * PER_PRODUCER, PER_PRODUCER)
                                           for i in range(4)])
    change = tenplex.Client(urls[0]).request("POST", "/api/v1/jobs/%s/resources" % job, ok=(202,), json={
        "devices": [[0, 0], [1, 0], [2, 0]], "config": {"tp": 1, "pp": 1, "dp": 3}, "atStep": STEPS}).json()
    out = os.path.join(TMP, job + "-old.json")
    old = spawn("steps", job, BATCH, 2, out, *["%s,%d" % (urls[r], r) for r in range(2)])
    return job, producers, change, (old, out)


def committed(urls, hosts, job, change):
    c = tenplex.Client(urls[0])
    status = c.request("GET", change["status"] + "?wait=true").json()
    while status.get("state") in ("stopping", "reconfiguring"):
        status = c.request("GET", change["status"] + "?wait=true").json()
    assert status.get("state") == "done", status
    assert status["generation"] == STEPS, status
    events = [e for e in status["events"] if "stream" in e]
    assert len(events) == 1 and events[0].endswith(" streamed-sample buffers re-partitioned over 3 data-parallel ranks"), \
        status["events"]
    for url in urls:
        assert streams.stream_status(job, addr=url)["ranks"] == hosts, (url, streams.stream_status(job, addr=url))


def finish(urls, hosts, run):
    job, producers, change, old = run
    before = ids_read(*old, job, producers)
    assert sorted(map(int, before)) == [0, 1] and all(len(v) == STEPS * BATCH for v in before.values()), before
    committed(urls, hosts, job, change)
    out = os.path.join(TMP, job + "-new.json")
    after = ids_read(spawn("train", job, BATCH, 0, out, *["%s,%d" % (urls[r], r) for r in range(3)]), out, job, producers)
    text, _ = producers.communicate(timeout=300)
    assert producers.returncode == 0, text
    assert all(after[str(r)] for r in range(3)), "every new rank gets samples: %s" % after
    return [i for ids in before.values() for i in ids], [i for ids in after.values() for i in ids]


def main(urls):
    hosts = [u.split("://")[-1] for u in urls]
    URLS.extend(urls)
    runs = {policy: start(urls, hosts, policy) for policy in ("fifo", "firo", "reservoir")}
    total = 4 * PER_PRODUCER
    for policy, run in runs.items():
        before, after = finish(urls, hosts, run)
        counts = collections.Counter(before + after)
        assert sorted(counts) == list(range(total)), (policy, sorted(set(range(total)) - set(counts)))  # none lost
        if policy != "reservoir":
            assert all(v == 1 for v in counts.values()), (policy, [k for k, v in counts.items() if v > 1])
        print("%s: %d read before the change, %d after, each sample %.2f times on average" % (
            policy, len(before), len(after), sum(counts.values()) / total), flush=True)
    print("OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
