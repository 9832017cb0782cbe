"""Streamed training samples (online training, as in Melissa): producers push samples to any daemon
of a job while training runs; each data-parallel rank reads batches from its training buffer in its
daemon, with the policy ``fifo``, ``firo`` or ``reservoir``. Nothing touches disk.

- :func:`create_stream` makes the job's stream over its ranks' daemons (``ranks``: one
  ``host:port`` per data-parallel rank), :func:`end_stream` ends production, :func:`repartition`
  moves the buffers onto new ranks (no unseen sample lost or duplicated), :func:`stream_status`.
- :class:`Producer`: ``push(sample)`` (bytes-like or a numpy array; blocks while the buffer is full,
  up to ``wait`` seconds per try, and retries on 429 after the daemon's ``Retry-After`` until
  ``timeout``; never drops a sample silently), ``close()`` (counts towards the stream's producers).
- :func:`batches` yields one rank's batches (lists of ``bytes``) until the stream ends;
  :class:`StreamDataset` is a ``torch.utils.data.IterableDataset`` over them (with ``decode``)."""

import struct
import time
import uuid

from .errors import TenplexError
from .wire.http_client import Client
from .wire.routes import job_route

ENDED = 1


def _path(job, what=""):
    return "%s/streams%s" % (job_route(job), "/" + what if what else "")


def _client(client, addr):
    return client if client is not None else Client(addr)


def create_stream(job, policy, capacity, threshold=0, ranks=None, dp=None, producers=0, max_sample_bytes=None,
                  seed=0, daemons=None, client=None, addr=None):
    """Creates the job's stream: every rank's buffer has ``policy`` (``fifo``, ``firo`` or
    ``reservoir``), ``capacity`` samples and ``threshold``; ``ranks`` lists the daemon (``host:port``)
    of each data-parallel rank (default: ``dp`` ranks, all at the daemon asked); production ends
    when ``producers`` producers have closed (0: only :func:`end_stream`); ``daemons``: other daemons
    (``host:port``) that producers and trainers may call (they relay to the ranks' daemons).
    Answers the status."""
    body = {"policy": policy, "capacity": capacity, "threshold": threshold, "producers": producers, "seed": seed}
    if ranks is not None:
        body["ranks"] = list(ranks)
    if daemons is not None:
        body["daemons"] = list(daemons)
    if dp is not None:
        body["dp"] = dp
    if max_sample_bytes is not None:
        body["max_sample_bytes"] = max_sample_bytes
    return _client(client, addr).request("POST", _path(job), ok=(201,), json=body).json()


def stream_status(job, client=None, addr=None):
    """The stream as the daemon asked sees it, with the buffers of the ranks it holds."""
    return _client(client, addr).request("GET", _path(job)).json()


def end_stream(job, client=None, addr=None):
    """Ends production at every daemon: thresholds lift and the buffers drain."""
    return _client(client, addr).request("POST", _path(job, "end")).json()


def delete_stream(job, client=None, addr=None):
    _client(client, addr).request("DELETE", _path(job))


def repartition(job, ranks, client=None, addr=None):
    """Moves the job's buffers onto new ranks (``host:port`` per rank) after a change of data parallelism."""
    return _client(client, addr).request("POST", _path(job, "partition"), json={"ranks": list(ranks)}).json()


class Producer:
    """Pushes samples into a job's stream through one daemon (any of the job's daemons).

    ``key``: samples with the same key go to the same rank (default: round robin over the ranks).
    ``wait``: how long (s) the daemon holds one push while the buffer is full before answering 429;
    ``timeout``: how long (s) one :meth:`push` keeps trying before it raises :class:`TenplexError`."""

    def __init__(self, job, addr=None, key=None, wait=5.0, timeout=600.0, client=None):
        self.job = job
        self.key = key
        self.wait = wait
        self.timeout = timeout
        self.client = _client(client, addr)
        self.pushed = 0
        self.refused = 0
        self._closed = False

    def push(self, sample, key=None):
        """Pushes one sample (bytes-like or numpy array); answers the rank it went to."""
        data = sample.tobytes() if hasattr(sample, "tobytes") else bytes(sample)
        # the sample's id, the same on every try: the daemon stores it once even when a try whose
        # answer never came was stored
        params = {"wait": int(self.wait * 1000), "id": uuid.uuid4().hex}
        if key is not None or self.key is not None:
            params["key"] = key if key is not None else self.key
        deadline = time.monotonic() + self.timeout
        while True:
            r = self.client.request("POST", _path(self.job, "samples"), ok=(200, 429), params=params, data=data,
                                    headers={"Content-Type": "application/octet-stream"})
            if r.status_code == 200:
                self.pushed += 1
                return r.json()["rank"]
            self.refused += 1
            if time.monotonic() >= deadline:
                raise TenplexError("push to job %s's stream: the buffer stayed full for %.0f s" % (self.job,
                                                                                                self.timeout), 429)
            time.sleep(min(float(r.headers.get("Retry-After", "1")), 0.05))

    def close(self):
        """Tells the job this producer is done (production ends when every expected producer has closed)."""
        if not self._closed:
            self._closed = True
            self.client.request("POST", _path(self.job, "close"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def parse_batch(body):
    """A batch body's samples (a list of ``bytes``) and whether the stream has ended for the rank."""
    if len(body) < 8:
        raise TenplexError("batch body of %d bytes is too short" % len(body))
    count, flags = struct.unpack_from(">II", body, 0)
    pos, out = 8, []
    view = memoryview(body)
    for _ in range(count):
        (n,) = struct.unpack_from(">I", body, pos)
        pos += 4
        if pos + n > len(body):
            raise TenplexError("batch body ends inside a sample")
        out.append(bytes(view[pos:pos + n]))
        pos += n
    return out, bool(flags & ENDED)


def read_batch(job, rank, size, wait=5.0, client=None, addr=None):
    """One batch of up to ``size`` samples of ``rank`` (``[]`` when none came within ``wait`` s),
    and whether the stream has ended for the rank."""
    r = _client(client, addr).request("GET", _path(job, "ranks/%d/batch" % rank),
                                      params={"size": size, "wait": int(wait * 1000)})
    return parse_batch(r.content)


def batches(job, rank, size, addr=None, client=None, wait=5.0):
    """Yields ``rank``'s batches (lists of ``bytes``) until the stream has ended and its buffer is empty."""
    c = _client(client, addr)
    while True:
        samples, ended = read_batch(job, rank, size, wait, client=c)
        if samples:
            yield samples
        if ended:
            return


def _iterable_dataset():
    try:
        import torch.utils.data as tud
        return tud.IterableDataset
    except ImportError:  # torch is optional for producers
        return object


class StreamDataset(_iterable_dataset()):
    """A ``torch.utils.data.IterableDataset`` of one rank's streamed samples: yields
    ``decode(bytes)`` per sample (default: the bytes), batch by batch, until the stream ends. Use it
    with ``DataLoader(ds, batch_size=None)`` and ``batch_size`` here, or let the loader batch."""

    def __init__(self, job, rank, batch_size=32, addr=None, decode=None, wait=5.0):
        super().__init__()
        self.job, self.rank, self.batch_size, self.addr, self.wait = job, rank, batch_size, addr, wait
        self.decode = decode or (lambda b: b)

    def __iter__(self):
        for batch in batches(self.job, self.rank, self.batch_size, addr=self.addr, wait=self.wait):
            for s in batch:
                yield self.decode(s)
