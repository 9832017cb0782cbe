"""No client of shared memory can crash the daemon, against a real daemon on this host
(TENPLEX_ADDR, started with --memory-limit 96m and --shm-dir TENPLEX_SHM_DIR, a small tmpfs this
script fills; TENPLEX_DAEMON_PID its process). Numpy only (torch is optional here). In order:

* another local user pre-creates files under the segment names the daemon would have used
  (tenplex-<pid>-<start>-<n>): saves still go through shared memory;
* a trainer truncates (or grows) its reserved segment before the commit, and a committed one before
  a checksummed range read: refused by the kernel (the segment is sealed), the save and the read
  are exact, and the daemon answers;
* --shm-dir's tmpfs fills up between the reservation and the commit: the commit is exact;
* memory kept for reuse (free segments) is not counted in tenplex_store_used_bytes, and a save that
  fits the budget once it is given back succeeds.

Arguments name the parts to run (names, truncate, committed, full, kept; default: all, in that order). Prints
OK at the end; any failure raises."""

import errno
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "..", "..", "clients", "python")
sys.path.insert(0, CLIENT)

import numpy as np  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import routes, shared_memory  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
SHM_DIR = os.environ["TENPLEX_SHM_DIR"]
DAEMON_PID = int(os.environ["TENPLEX_DAEMON_PID"])
c = tenplex.Client(ADDR)
JOB = "shm-safety"
W = "model/w.numpy.ndarray"


def overview(job=JOB):
    return c.request("GET", routes.shared_route(job)).json()


def metrics():
    """The daemon's store gauges (it must answer)."""
    out = {}
    for line in c.request("GET", "/metrics").text.splitlines():
        if line.startswith("tenplex_store_") and " " in line:
            name, value = line.split(" ", 1)
            out[name] = int(float(value))
    return out


def truncations(path, sizes):
    """The errno of each attempt to change the size of ``path`` (0: it changed)."""
    got = []
    for size in sizes:
        try:
            os.truncate(path, size)
            got.append(0)
        except OSError as e:
            got.append(e.errno)
    return got


def commit(res, step):
    return c.request("POST", routes.shared_commit_route(JOB, 0, res["id"]),
                     json={"step": step, "world": 1, "order": [W]}).json()


def load_w(job=JOB):
    got, step = tenplex.load(job=job, client=c, shared=False, as_torch=False)
    return got["model"]["w"], step


def process_start(pid):
    with open("/proc/%d/stat" % pid, "rb") as f:
        stat = f.read().decode("ascii")
    return int(stat[stat.rindex(")") + 2:].split(" ")[19])


# ---- another local user holds the names segments used to have: saves still use shared memory
def names():
    start = process_start(DAEMON_PID)
    squatted = []
    for n in range(1, 65):
        p = os.path.join(SHM_DIR, "tenplex-%d-%d-%d" % (DAEMON_PID, start, n))
        fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.fchown(fd, 65534, 65534)  # nobody's
        os.close(fd)
        squatted.append(p)
    w1 = np.arange(1 << 20, dtype=np.float32)  # 4 MiB
    r = tenplex.save({"model": {"w": w1}}, job=JOB, step=1, client=c, shared=True)
    assert r["complete"], r
    assert overview()["liveSegments"] == 1, overview()
    for p in squatted:
        os.remove(p)
    assert os.listdir(SHM_DIR) == [], os.listdir(SHM_DIR)  # segments are no files in the directory


# ---- a trainer shrinks (or grows) its reserved segment before the commit: the kernel refuses
def truncate():
    w2 = np.arange(1 << 20, dtype=np.float32) * 2
    res, m = shared_memory.reserve(c, JOB, 0, [(W, w2)])
    shared_memory.fill(m, res, [(W, w2)])
    tried = truncations(res["file"], [0, res["capacity"] // 2, res["capacity"] + 4096])
    fd = os.open(res["file"], os.O_RDWR)
    try:
        os.ftruncate(fd, 4096)
        tried.append(0)
    except OSError as e:
        tried.append(e.errno)
    finally:
        os.close(fd)
    try:
        answer = commit(res, 2)
    except Exception as e:  # noqa: BLE001 - say what the daemon did
        raise AssertionError("the commit after truncating its segment %s failed (is the daemon still running?): %s"
                             % (tried, e)) from None
    assert tried == [errno.EPERM] * 4, tried  # sealed: nobody changes a segment's size
    assert os.stat(res["file"]).st_size == res["capacity"]
    assert answer["complete"], answer
    got, step = load_w()
    assert step == 2 and np.array_equal(got, w2)



# ---- the same after the commit, then a checksummed range read (what reconfiguration parts send)
def committed():
    w2 = np.arange(1 << 20, dtype=np.float32) * 5
    assert tenplex.save({"model": {"w": w2}}, job=JOB, step=3, client=c, shared=True)["complete"]
    pinned = shared_memory.pin(c, JOB, 0)
    entry = [e for e in pinned["entries"] if e["path"] == W][0]
    tried = truncations(entry["file"], [0, 4096])
    shared_memory.release(c, JOB, pinned["id"])
    path = "/job/%s/generations/3/0/%s" % (JOB, W)
    try:
        rr = c.request("GET", routes.tensors_route(path), params={"range": "3:200003"}, headers={"x-want-crc32c": "1"})
    except Exception as e:  # noqa: BLE001
        raise AssertionError("the range read after truncating its segment %s failed (is the daemon still running?): %s"
                             % (tried, e)) from None
    assert tried == [errno.EPERM] * 2, tried
    assert rr.headers.get("x-tensor-crc32c"), rr.headers
    assert np.array_equal(np.frombuffer(rr.content, dtype=np.float32), w2[3:200003])
    metrics()


# ---- --shm-dir's tmpfs fills between the reservation and the commit: every byte is kept as it was
def full():
    w3 = np.full(1 << 20, 3.0, dtype=np.float32)  # 4 MiB, a quarter written before the tmpfs fills
    res, m = shared_memory.reserve(c, JOB, 0, [(W, w3)])
    off = res["tensors"][0]["offset"]
    m.mm[off:off + w3.nbytes // 4] = w3[:w3.size // 4].tobytes()
    filler = os.path.join(SHM_DIR, "filler")
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        while True:
            os.write(fd, b"\1" * (1 << 20))
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    # what the segment holds now (a reused segment keeps an older save's bytes where nothing was written)
    expected = np.frombuffer(m.mm, dtype=np.float32, count=w3.size, offset=off).copy()
    assert (expected[:w3.size // 4] == 3.0).all()
    try:
        answer = commit(res, 4)
    except Exception as e:  # noqa: BLE001
        raise AssertionError("the commit with a full --shm-dir failed (is the daemon still running?): %s" % e) from None
    finally:
        os.remove(filler)
    assert answer["complete"], answer
    got, step = load_w()
    assert step == 4 and np.array_equal(got, expected), (step, got[:4], got[-4:], int((got != expected).sum()))


# ---- memory kept for reuse is not used, and is given back before a save is refused
def kept():
    before = metrics()
    res, m = shared_memory.reserve(c, "shm-kept", 0, [(W, np.zeros(6 << 20, dtype=np.float32))])  # 24 MiB and a header
    held = metrics()
    assert held["tenplex_store_used_bytes"] == before["tenplex_store_used_bytes"] + res["capacity"], (before, held)
    shared_memory.release(c, "shm-kept", res["id"])
    kept = metrics()
    assert overview("shm-kept")["keptBytes"] >= res["capacity"], overview("shm-kept")
    assert kept["tenplex_store_used_bytes"] == before["tenplex_store_used_bytes"], (before, kept)  # not counted as used
    assert kept["tenplex_store_pooled_bytes"] >= res["capacity"], kept
    # 60 MiB over REST: fits the 96 MiB budget only once the kept segment is given back
    budget = kept["tenplex_store_budget_bytes"]
    size = budget - kept["tenplex_store_used_bytes"] - (4 << 20)
    assert size + kept["tenplex_store_used_bytes"] + res["capacity"] > budget, (size, kept)
    big = np.ones(size // 4, dtype=np.float32)
    r = tenplex.save({"model": {"w": big}}, job="shm-rest", step=1, client=c, shared=False)
    assert r["complete"], r
    after = metrics()
    assert after["tenplex_store_used_bytes"] + after["tenplex_store_pooled_bytes"] <= budget, after
    got, _ = load_w("shm-rest")
    assert np.array_equal(got, big)


PARTS = {"names": names, "truncate": truncate, "committed": committed, "full": full, "kept": kept}
for part in sys.argv[1:] or list(PARTS):
    PARTS[part]()
print("OK")
