"""A distributed rehearsal buffer for continual learning, held by the daemons (docs/REHEARSAL.md).

Each data-parallel rank's daemon keeps up to ``per_class`` representatives of each of ``classes``
classes. After a step, :meth:`RehearsalBuffer.update` offers each sample of the minibatch with
probability ``candidates / batch`` (chosen here, so only the candidates travel); the daemon puts each
into its class's memory, replacing a random representative when that memory is full. In the same
background call the next ``r`` representatives are drawn uniformly from the job's whole buffer (all
ranks, on all daemons, fetched peer to peer by the daemon), so :meth:`augment` at the next step only
waits when that draw is not ready yet. Samples are tuples of arrays: ``(input, label)`` or
``(input, label, extra)`` (e.g. logits, for dark experience replay); numpy arrays or torch tensors.

Typical loop::

    buf = RehearsalBuffer(job, rank, classes=10, per_class=100, candidates=8, batch=64, representatives=16)
    for x, y in loader:
        x2, y2 = buf.augment(x, y)        # representatives drawn during the previous step
        buf.update(x, y)                  # candidates in, next draw started: in the background,
        ...train on (x2, y2)...           # overlapping this step's compute (section 5.4)

With an ``extra`` part computed by the step (DER's logits), call ``update`` as soon as it is known
(after the forward pass), so that the draw still overlaps the rest of the step.
"""

import collections
import http.client
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode, urlsplit

import numpy as np

from .errors import TenplexError
from .wire.http_client import ERROR_CODE_HEADER, client_for
from .wire.routes import job_route


def encode(samples):
    """The daemon's batch form of ``samples``: a list of (class, [array, ...])."""
    out = [struct.pack("<i", len(samples))]
    for cls, parts in samples:
        out.append(struct.pack("<ii", int(cls), len(parts)))
        for a in parts:
            a = np.asarray(a)
            if not a.flags.c_contiguous:  # (ascontiguousarray would make a scalar 1-d)
                a = a.copy(order="C")
            dtype = a.dtype.str.encode("ascii")
            out.append(struct.pack("<i", len(dtype)) + dtype + struct.pack("<i", a.ndim))
            out.append(struct.pack("<%dq" % a.ndim, *a.shape) + struct.pack("<q", a.nbytes))
            out.append(a.tobytes())
    return b"".join(out)


def decode(body):
    """The samples of a batch answer: a list of (class, [array, ...])."""
    view = memoryview(body)
    (count,), at = struct.unpack_from("<i", view, 0), 4
    samples = []
    for _ in range(count):
        cls, nparts = struct.unpack_from("<ii", view, at)
        at += 8
        parts = []
        for _ in range(nparts):
            (dlen,) = struct.unpack_from("<i", view, at)
            dtype = bytes(view[at + 4:at + 4 + dlen]).decode("ascii")
            at += 4 + dlen
            (ndim,) = struct.unpack_from("<i", view, at)
            shape = struct.unpack_from("<%dq" % ndim, view, at + 4)
            (nbytes,) = struct.unpack_from("<q", view, at + 4 + 8 * ndim)
            at += 12 + 8 * ndim
            parts.append(np.frombuffer(view[at:at + nbytes], dtype=np.dtype(dtype)).reshape(shape))
            at += nbytes
        samples.append((cls, parts))
    return samples


class _Connection:
    """One keep-alive HTTP/1.1 connection to a plain-``http`` daemon for the per-step calls of the
    background thread: ``http.client`` directly, which holds the GIL for a fraction of a ``requests``
    call's time (the training thread wakes from its step without waiting for it). Reconnects once
    when the daemon closed the idle connection."""

    def __init__(self, client):
        url = urlsplit(client.addr)
        self.host, self.port = url.hostname, url.port or 80
        self.timeout = client.timeout
        self.headers = {"Content-Type": "application/octet-stream"}
        if client.token:
            self.headers["Authorization"] = "Bearer " + client.token
        self.conn = None

    def post(self, path, params, body):
        url = path + ("?" + urlencode(params) if params else "")
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request("POST", url, body=body, headers=self.headers)
                resp = self.conn.getresponse()
                data = resp.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self.close()
                if attempt or not isinstance(e, (ConnectionResetError, BrokenPipeError,
                                                 http.client.RemoteDisconnected)):
                    raise TenplexError("cannot reach the tenplex daemon at %s:%d (%s)" % (self.host, self.port, e)) \
                        from None
        if resp.status not in (200, 429):
            reason = data.decode("utf-8", "replace").strip()
            raise TenplexError("POST %s: %d %s" % (path, resp.status, reason), resp.status, reason,
                               resp.getheader(ERROR_CODE_HEADER))
        return resp.status, resp.getheader("Retry-After"), data

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _numpy(a):
    if hasattr(a, "detach"):  # a torch tensor
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _appended(batch, arrays):
    """``batch`` with ``arrays`` (one per representative) appended along the first axis, as the type
    of ``batch`` (numpy or torch): one copy into an array made for the whole result."""
    if hasattr(batch, "detach"):
        import torch
        return torch.cat([batch, torch.from_numpy(np.stack(arrays)).to(batch.device)])
    out = np.empty((len(batch) + len(arrays),) + tuple(batch.shape[1:]), dtype=np.result_type(batch, arrays[0]))
    out[:len(batch)] = batch
    for i, a in enumerate(arrays, len(batch)):
        out[i] = a
    return out


class RehearsalBuffer:
    """Rank ``rank``'s side of job ``job``'s rehearsal buffer on its daemon.

    With ``classes`` given, the buffer is configured on the daemon (``classes``, ``per_class``,
    ``candidates``, ``batch``, ``seed``; the same configuration again is fine); without, the daemon's
    configuration is read. ``representatives`` (r) is how many to draw per step; ``scope="local"``
    draws from this rank's own buffer only (faster, less diverse: for comparison). ``ahead``: how
    many draws are in flight; step k is augmented with the draw started at step k - ``ahead`` (1,
    the paper's: a draw has one step's compute to come back; 2 absorbs draws that take up to two
    steps, e.g. on a loaded host, for representatives one step older; the first ``ahead`` steps
    get none)."""

    def __init__(self, job, rank, classes=None, per_class=None, candidates=None, batch=None, seed=0,
                 representatives=0, scope="global", client=None, addr=None, ahead=1):
        self.job = job
        self.rank = int(rank)
        self.r = int(representatives)
        self.ahead = int(ahead)
        if self.ahead < 1:
            raise ValueError("ahead %r: at least one draw is in flight" % (ahead,))
        self.scope = scope
        self.client = client_for(client, addr)
        self.route = job_route(job) + "/rehearsal"
        if classes is not None:
            body = {"classes": classes, "perClass": per_class, "candidates": candidates, "batch": batch, "seed": seed}
            self.config = self.client.request("PUT", self.route, ok=(200, 201), json=body).json()["config"]
        else:
            self.config = self.client.request("GET", self.route).json()["config"]
        self.p = self.config["candidates"] / self.config["batch"]
        self.rng = np.random.default_rng([self.config["seed"], self.rank])
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tenplex-rehearsal")
        self._local = threading.local()
        self._conn = None
        self._pending = collections.deque()  # the draws in flight, oldest first
        self._report = None  # microseconds the last augment waited for its draw, sent with the next update
        self.waited = 0.0  # seconds augment() spent waiting for a draw

    def _client(self):
        c = getattr(self._local, "client", None)
        if c is None:
            c = self._local.client = self.client.clone()
        return c

    def _post(self, path, params, body):
        """A POST from the background thread: its own keep-alive connection for plain http (with
        the client's checksums off), else its own clone of the client. Answers (status, Retry-After,
        body) for a 200 or a 429; anything else raises."""
        if self.client.addr.startswith("http://") and not self.client.checksums:
            if self._conn is None:  # (only the one worker thread posts)
                self._conn = _Connection(self.client)
            return self._conn.post(path, params, body)
        r = self._client().request("POST", path, params=params, data=body, ok=(200, 429),
                                   headers={"Content-Type": "application/octet-stream"})
        return r.status_code, r.headers.get("Retry-After"), r.content

    def candidates(self, inputs, labels, extra=None, classes=None):
        """The samples of a minibatch offered (each with probability c/b), as (class, [arrays])."""
        x, y = _numpy(inputs), _numpy(labels)
        e = None if extra is None else _numpy(extra)
        cls = _numpy(classes) if classes is not None else y
        if cls.ndim != 1 or not np.issubdtype(cls.dtype, np.integer):
            raise ValueError("labels are not class numbers: give classes= (one integer per sample)")
        chosen = np.nonzero(self.rng.random(len(x)) < self.p)[0]
        return [(int(cls[i]), [x[i], y[i]] + ([] if e is None else [e[i]])) for i in chosen]

    def update(self, inputs, labels, extra=None, classes=None, wait=False):
        """Offers this step's minibatch (candidates chosen now, sent in the background) and starts the
        next draw of r representatives. ``wait=True`` returns only once both are done."""
        body = encode(self.candidates(inputs, labels, extra, classes))
        report, self._report = self._report, None
        fut = self._worker.submit(self._update_then_draw, body, report)  # one worker: updates stay in order
        self._pending.append(fut)
        if len(self._pending) > self.ahead:  # updates without augments (filling): their draws are not used
            self._pending.popleft()
        if wait:
            fut.result()

    def _update_then_draw(self, body, waited_us=None):
        params = {"draw": self.r, "scope": self.scope} if self.r > 0 else {}  # one round trip for both
        if waited_us is not None:  # the daemon's tenplex_rehearsal_augment_* metrics
            params["waited"] = waited_us
        while True:  # 429 while a re-partition holds updates off: retry after its Retry-After
            status, retry_after, content = self._post("%s/%d/update" % (self.route, self.rank), params, body)
            if status == 200:
                break
            time.sleep(min(float(retry_after or "1"), 0.2))
        return decode(content) if self.r > 0 else []

    def _draw(self, r):
        resp = self._client().request("GET", "%s/%d/sample" % (self.route, self.rank),
                                      params={"r": r, "scope": self.scope})
        return decode(resp.content)

    def sample(self, r):
        """Draws ``r`` representatives now (blocking): a list of (class, [input, label(, extra)])."""
        return self._draw(int(r))

    def representatives(self):
        """The representatives of the draw started ``ahead`` updates ago (waiting for them if needed;
        each draw is taken once); [] while fewer draws are in flight."""
        if len(self._pending) < self.ahead:
            return []
        fut = self._pending.popleft()
        ready = fut.done()
        t = time.perf_counter()
        got = fut.result()
        waited = time.perf_counter() - t
        self.waited += waited
        self._report = 0 if ready else max(1, int(waited * 1e6))
        return got

    def augment(self, inputs, labels, extra=None):
        """The minibatch with the representatives drawn in the background appended: ``(inputs,
        labels)``, or ``(inputs, labels, extra)`` when ``extra`` is given (representatives without an
        extra part are left out then)."""
        reps = self.representatives()
        if extra is not None:
            reps = [s for s in reps if len(s[1]) > 2]
        if not reps:
            return (inputs, labels) if extra is None else (inputs, labels, extra)
        out = [_appended(inputs, [s[1][0] for s in reps]), _appended(labels, [s[1][1] for s in reps])]
        if extra is not None:
            out.append(_appended(extra, [s[1][2] for s in reps]))
        return tuple(out)

    def status(self):
        """The daemon's view of the job's buffer there (config, counts per rank, bytes)."""
        return self.client.request("GET", self.route).json()

    def close(self):
        self._worker.shutdown(wait=True)
        if self._conn is not None:
            self._conn.close()
