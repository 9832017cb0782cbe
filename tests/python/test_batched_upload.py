"""Uploads of many leaves against a real daemon (TENPLEX_ADDR): small tensors and files travel in compact
batches (tar archives where a name cannot go in a batch's index; a few requests, not one per leaf), large
ones over parallel connections, and a state of both round-trips exactly; with checksums on too; an error
in one of the parallel uploads surfaces as an exception. Prints OK at the end; any failure raises."""

import http.server
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402
import requests  # noqa: E402
import torch  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import batched_upload, compact_batch, tree_codec, http_client  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
rng = np.random.default_rng(16)


def state():
    small = {"t%03d" % i: rng.standard_normal((3, 5, 7)).astype(np.float32) for i in range(200)}
    small.update({"s%03d" % i: np.int64(i) for i in range(50)})
    return {
        "small": small,
        "odd": [rng.integers(0, 255, size=n, dtype=np.uint8) for n in (1, 511, 512, 513, 4097)],
        "empty": np.zeros((0, 3), dtype=np.float32),
        "bf16": torch.randn(9, 11).to(torch.bfloat16),
        "names": {"step": 7, "lr": 0.001, "note": "héllo", "flag": True, "none": None},
        "keys": {"ключ": np.arange(3, dtype=np.int16), "k" * 120: np.arange(2, dtype=np.float64), 5: "int key"},
        "big": {
            "w": rng.standard_normal((1000, 1000)).astype(np.float32),
            "u": rng.integers(0, 255, size=(3 << 20) + 5, dtype=np.uint8),
            "l": rng.integers(-9, 9, size=(513, 1029), dtype=np.int64),
            "h": torch.randn(1031, 517, dtype=torch.float16),
        },
    }


def same(a, b, where="state"):
    if isinstance(a, dict):
        assert list(a) == list(b), "%s: keys %s vs %s" % (where, list(a), list(b))
        for k in a:
            same(a[k], b[k], where + "." + str(k))
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (where, i))
    elif tree_codec.is_tensor(a):
        x, y = as_numpy(a), as_numpy(b)
        assert x.dtype == y.dtype and x.shape == y.shape, (where, x.dtype, x.shape, y.dtype, y.shape)
        assert np.array_equal(x, y), where
    else:
        assert type(a) is type(b) and a == b, (where, a, b)


def as_numpy(t):
    """A tensor's values as numpy (bf16 as its int16 bit patterns)."""
    if isinstance(t, torch.Tensor):
        return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
    return np.asarray(t)


class Counting:
    """Counts requests and the client objects (threads' clones included) that sent them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []
        self.inner = http_client.Client.request

    def __enter__(self):
        counter = self

        def request(client, method, path, ok=(200,), **kw):
            with counter.lock:
                counter.calls.append((id(client), method, path))
            return counter.inner(client, method, path, ok, **kw)

        http_client.Client.request = request
        return self

    def __exit__(self, *exc):
        http_client.Client.request = self.inner


s = state()
leaves = len(tree_codec.flatten(s))
batches = []
post_batch = compact_batch.post
compact_batch.post = lambda cl, prefix, body, replace: batches.append(len(body.bodies)) or post_batch(cl, prefix, body, replace)
with Counting() as n:
    sent = tenplex.upload(s, "/job/pybatch/s1", client=c)
compact_batch.post = post_batch
assert batches and sum(batches) >= 250, "the small leaves went in compact batches: %s" % batches
assert sent == sum(p[3] for p in batched_upload.prepare(tree_codec.flatten(s))), sent
posts = [x for x in n.calls if x[1] == "POST" and x[2] == "/upload"]
assert len(posts) >= 1 and len(n.calls) <= 8, "%d requests for %d leaves: %s" % (len(n.calls), leaves, n.calls)
assert len({x[0] for x in n.calls}) > 1, "the uploads ran on clones of the client, in parallel"
same(s, tenplex.download("/job/pybatch/s1", client=c, as_torch=True))

# the same with checksums on every body, archives included; replaces what is there
cs = tenplex.Client(ADDR, checksums=True)
s2 = state()
tenplex.upload(s2, "/job/pybatch/s1", client=cs)
same(s2, tenplex.download("/job/pybatch/s1", client=cs, as_torch=True))

# an archive with a wrong checksum is refused and stores nothing
bad = batched_upload.archive(batched_upload.prepare([("x.numpy.ndarray", "tensor", np.arange(6, dtype=np.int32))]))
try:
    c.request("POST", "/upload", params={"prefix": "/job/pybatch/bad"}, data=batched_upload.Pieces(bad),
              headers={"Content-Type": "application/x-tar", "x-tensor-crc32c": "00000000"})
    raise AssertionError("a wrong checksum was accepted")
except tenplex.TenplexError as e:
    assert e.status == 400 and "checksum mismatch" in str(e), e
assert c.request("GET", "/api/v1/stat/job/pybatch/bad", ok=(200, 404)).status_code == 404

# a state that would overwrite a tensor without replace is refused before anything is written
tenplex.upload({"big": {"w": np.ones((1000, 1000), dtype=np.float32)}}, "/job/pybatch/s3", client=c)
try:
    tenplex.upload(state(), "/job/pybatch/s3", client=c, replace=False)
    raise AssertionError("an upload over an existing tensor without replace succeeded")
except tenplex.TenplexError as e:
    assert e.status == 409 and e.code == "exists" and "/job/pybatch/s3/big/" in str(e), (e.status, e.code, str(e))
assert sorted(tenplex.download("/job/pybatch/s3", client=c, as_torch=False)["big"]) == ["w"]

# an error in one of the parallel uploads (one tensor more than the daemon's memory takes) is raised
metrics = c.request("GET", "/metrics").text
budget = int(float(next(l.split()[1] for l in metrics.splitlines() if l.startswith("tenplex_store_budget_bytes "))))
huge = {"h%d" % i: np.zeros(budget // 3 + 1, dtype=np.uint8) for i in range(4)}  # 4/3 of the budget (pages untouched)
try:
    tenplex.upload(huge, "/job/pybatch/s4", client=c)
    raise AssertionError("an upload beyond the memory budget succeeded")
except tenplex.TenplexError as e:
    assert e.status in (413, 507) and e.code in ("insufficient_storage", "too_large"), (e.status, e.code, str(e))
c.request("DELETE", "/api/v1/dirs/job/pybatch/s4", params={"recursive": "true"})

# an archive built while it is sent has the bytes and the length of the one built first, every time it
# is iterated (a request sent again), for every kind of member: short, long and non-ASCII names, bodies
# below and above the size sent from their own memory, empty tensors, files
mixed = {"a": np.arange(7, dtype=np.int16), "big": torch.ones(40000), "z": np.zeros(0, dtype=np.float64),
         "\u00e9": np.arange(3.0), "L" * 120: np.arange(5, dtype=np.uint8), "s": "text", "n": 5}
mixed_leaves = batched_upload.prepare(tree_codec.flatten(mixed, False))
eager = b"".join(bytes(p) for p in batched_upload.archive(mixed_leaves))
lazy = batched_upload.Archive(batched_upload.members(mixed_leaves))
for _ in range(2):
    assert b"".join(bytes(p) for p in lazy) == eager and len(lazy) == len(eager), (len(lazy), len(eager))
# the same across block boundaries: members that fill several reused blocks (each piece copied before
# the next is asked for, as a sender does), a body sent from its own memory between them, a long name
many = [("m%04d" % i, memoryview(rng.integers(0, 255, size=4093 + i % 7, dtype=np.uint8))) for i in range(700)]
many[350:350] = [("L" * 300, memoryview(np.arange(70000, dtype=np.uint8))), ("e", b"")]
eager = b"".join(bytes(p) for p in batched_upload._blocks(many))
lazy = batched_upload.Archive(many)
for _ in range(2):
    assert b"".join(bytes(p) for p in lazy) == eager == b"".join(bytes(p) for p in lazy.pieces())
tenplex.upload(mixed, "/job/pybatch/mixed", client=c)
back = tenplex.download("/job/pybatch/mixed", client=c)
assert back["n"] == 5 and back["s"] == "text" and torch.equal(back["big"], mixed["big"]), back.keys()
assert np.array_equal(back["L" * 120], mixed["L" * 120]) and np.array_equal(back["\u00e9"], mixed["\u00e9"])

# a batch's body built while it is sent has the bytes of the one built first, every time it is iterated,
# across reused blocks, with bodies sent from their own memory and empty ones between them
many = {"m%04d" % i: rng.integers(0, 255, size=4093 + i % 7, dtype=np.uint8) for i in range(700)}
many.update({"big": np.arange(70000, dtype=np.uint8), "e": np.zeros(0, dtype=np.int8), "s": "text", "\u00e9" * 90: 1.5,
             "t": torch.arange(6, dtype=torch.int16).reshape(2, 3), "nc": np.arange(12.0).reshape(3, 4).T,
             "zd": np.array(3.0)})
many_leaves = batched_upload.prepare(tree_codec.flatten(many, False))
lazy = compact_batch.Batch(many_leaves)
eager = b"".join(bytes(p) for p in lazy.pieces())
for _ in range(2):
    assert b"".join(bytes(p) for p in lazy) == eager and len(lazy) == len(eager), (len(lazy), len(eager))
fields = eager.partition(b"\n")[0].split(b" ")
assert fields[:2] == [b"tenplex-batch", b"1"] and int(fields[2]) == len(many_leaves), fields
assert len(b" ".join(fields)) + 1 + int(fields[3]) == len(lazy.head), "the index length is the index's"
tenplex.upload(many, "/job/pybatch/many", client=c)
same(many, tenplex.download("/job/pybatch/many", client=c, as_torch=True))
# a name with a newline cannot go in a batch's index: such leaves go in a tar archive, and come back
odd = {"a\nb": np.arange(4, dtype=np.int32), "plain": np.arange(3, dtype=np.int8)}
try:
    compact_batch.Batch(batched_upload.prepare(tree_codec.flatten(odd, False)))
    raise AssertionError("a name with a newline went in a batch's index")
except compact_batch.Unbatchable:
    pass
tenplex.upload(odd, "/job/pybatch/odd", client=c)
same(odd, tenplex.download("/job/pybatch/odd", client=c, as_torch=False))

# deep names split batches: the daemon parses every name of a batch before it allocates, within a heap budget
deep = [("d/" * 39 + "t%04d" % i, "file", b"x", 1) for i in range(2048)]
deep_archives, _ = batched_upload.split(deep)
assert len(deep_archives) == 2 and all(sum(l[0].count("/") + 1 for l in a) <= batched_upload.BATCH_NAME_PARTS
                                       for a in deep_archives), [len(a) for a in deep_archives]

# runs of small torch tensors of one dtype travel as one joined body: every kind of tensor such a run may
# hold, and those that go alone between them, come back with their own values
z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
runs = {"a%02d" % i: torch.randn(3, 4) for i in range(5)}
runs.update({"grad": torch.randn(2, 2, requires_grad=True), "t": torch.randn(4, 3).t(), "scalar": torch.tensor(2.5),
             "bf": torch.randn(7).to(torch.bfloat16), "bf2": torch.randn(2, 3).to(torch.bfloat16),
             "empty": torch.zeros(0, 2), "i": torch.arange(5), "conj": z.conj(), "conj2": z.conj(),
             "neg": torch.tensor([1.0, -2.0])._neg_view(), "alone_conj": z.conj(), "n": np.arange(3.0),
             "last": torch.ones(2, dtype=torch.float64)})
tenplex.upload(runs, "/job/pybatch/runs", client=c)
back = tenplex.download("/job/pybatch/runs", client=c, as_torch=True)
assert list(back) == list(runs), list(back)
for k, v in runs.items():
    want = v.detach().resolve_conj().resolve_neg() if isinstance(v, torch.Tensor) else torch.from_numpy(v)
    got = back[k] if isinstance(back[k], torch.Tensor) else torch.from_numpy(back[k])
    assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want), (k, got, want)

# a daemon from before compact batches (stood in for by a proxy to the real one that answers a batch as
# such a daemon does, before reading it: 400 "missing query parameter 'path'") gets the same leaves as tar
# archives, and every later upload to it goes as tar at once
class OlderDaemon(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    batches = []

    def log_message(self, *args):
        pass

    def relay(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.command == "POST" and self.headers.get("Content-Type") == compact_batch.CONTENT_TYPE:
            OlderDaemon.batches.append(len(body))
            reply = b'{"error":"missing query parameter \'path\'"}'
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        r = requests.request(self.command, ADDR + self.path, data=body, headers=headers)
        self.send_response(r.status_code)
        for k, v in r.headers.items():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(r.content)))
        self.end_headers()
        self.wfile.write(r.content)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay


older = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OlderDaemon)
threading.Thread(target=older.serve_forever, daemon=True).start()
old_client = tenplex.Client("http://127.0.0.1:%d" % older.server_address[1])
s_old = state()
del s_old["big"]  # small leaves only: one request each
tenplex.upload(s_old, "/job/pybatch/older", client=old_client)
same(s_old, tenplex.download("/job/pybatch/older", client=c, as_torch=True))
assert len(OlderDaemon.batches) == 1, "one batch was tried, then tar: %s" % OlderDaemon.batches
tenplex.upload(s_old, "/job/pybatch/older2", client=old_client)
assert len(OlderDaemon.batches) == 1, "a daemon known to take no batches gets none: %s" % OlderDaemon.batches
same(s_old, tenplex.download("/job/pybatch/older2", client=c, as_torch=True))
older.shutdown()

# a failure in any job of run_parallel surfaces, whichever thread ran it
def boom(cl):
    raise RuntimeError("job failed")


try:
    batched_upload.run_parallel(c, [lambda cl: 1, boom, lambda cl: 2, lambda cl: 3], workers=3)
    raise AssertionError("the failed job went unnoticed")
except RuntimeError as e:
    assert "job failed" in str(e)
c.request("DELETE", "/api/v1/dirs/job/pybatch", params={"recursive": "true"})  # leaves the budget to later scripts
print("OK")
