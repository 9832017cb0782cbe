"""Reading parts of a job's complete generation from whichever daemon holds each saved rank: the
readers that reshard (:mod:`tenplex.dcp_reader`, :mod:`tenplex.dtensor_load`) need one rank's tree, one
stored tensor's dtype and shape, and byte ranges of it, from any rank of the generation.

A saved rank's tensors are copied from the daemon's shared memory where the rank's tree is pinned on
this host, else read as one range read (``?range=``) each, from this host's daemon or a peer that holds
the rank (``daemons``: ``host:port`` or URLs, default the addresses in ``TENPLEX_DAEMONS``)."""

import json
import os

import numpy as np

from .errors import NoCheckpoint, TenplexError
from .stop import generations
from .wire import routes, torch_values, tree_codec
from .wire import shared_memory as shm
from .wire.http_client import Client, base_url
from .wire.transfer import body_into, listing


def daemons_from_env():
    text = os.environ.get("TENPLEX_DAEMONS")
    if not text:
        return []
    try:
        daemons = json.loads(text)
        if not isinstance(daemons, dict) or not all(isinstance(a, str) for a in daemons.values()):
            raise ValueError("not an object of worker numbers to host:port strings")
    except ValueError as e:
        raise TenplexError("TENPLEX_DAEMONS is malformed (%s): %r" % (e, text[:200])) from None
    return list(daemons.values())


def torch_dtype(short):
    return torch_values.from_numpy(np.empty(0, dtype=tree_codec.numpy_dtype(short)), short).dtype


class GenerationSource:
    """One complete generation of ``job`` as seen from ``client``'s daemon and its peers ``daemons``
    (``None``: those of ``TENPLEX_DAEMONS``). :meth:`open` chooses the step; every answer is cached
    until the next :meth:`open`; :meth:`unpin` releases the pins taken."""

    def __init__(self, client, job, daemons=None):
        self.client, self.job = client, job
        daemons = daemons_from_env() if daemons is None else list(daemons)
        self.daemons = [a for a in daemons if base_url(a) != client.addr]
        self.step = self.world = None
        self.shared = True  # False: every tensor over REST, no pins
        self._holders, self._listings, self._pins = {}, {}, {}

    def open(self, step=None):
        """Reads generation ``step`` (default the job's latest complete one): its world. The step."""
        if step is None:
            step = generations(self.job, self.client).get("current")
            if step is None:
                raise NoCheckpoint("job %r has no complete generation at %s" % (self.job, self.client.addr))
        self.step = int(step)
        self._holders, self._listings = {}, {}
        self.world = int(self._generation(self.client)["world"])
        return self.step

    def rank_dir(self, rank):
        return "%s/%d" % (routes.generation_dir(self.job, self.step), rank)

    def _generation(self, c):
        for g in generations(self.job, c).get("generations", []):
            if int(g.get("step", -1)) == self.step:
                if not g.get("complete"):
                    raise NoCheckpoint("generation %d of job %r is not complete" % (self.step, self.job))
                return g
        if c is self.client:
            raise NoCheckpoint("job %r has no generation %d at %s" % (self.job, self.step, c.addr))
        return {}

    def _peers(self):
        c = self.client
        return [Client(a, c.token, c.timeout, c.ca, c.checksums) for a in self.daemons]

    def holder(self, rank):
        """The client of the daemon that holds the saved ``rank`` (a daemon that cannot be reached is
        passed over: it may be the one that failed)."""
        if not 0 <= rank < self.world:
            raise TenplexError("rank %d is not in generation %d of job %r (%d ranks)" % (rank, self.step, self.job, self.world))
        if rank in self._holders:
            return self._holders[rank]
        unreachable = []
        for c in [self.client] + self._peers():
            try:
                ranks = self._generation(c).get("localRanks", [rank] if c is self.client else [])
            except TenplexError as e:
                if c is self.client:
                    raise
                unreachable.append("%s (%s)" % (c.addr, e))
                continue
            if rank in ranks:
                self._holders[rank] = c
                return c
        raise NoCheckpoint("no daemon known here holds rank %d of generation %d of job %r (asked: %s%s)"
                           % (rank, self.step, self.job, [self.client.addr] + self.daemons,
                              "; unreachable: " + ", ".join(unreachable) if unreachable else ""))

    def listed(self, rank):
        """The saved rank's tree, by absolute path (listed once)."""
        if rank not in self._listings:
            self._listings[rank] = {e["path"]: e for e in listing(self.holder(rank), self.rank_dir(rank))}
        return self._listings[rank]

    def stored(self, rank, key):
        """``(dtype, shape, view)`` of the tensor ``key`` of a saved rank's tree: from its pin in shared
        memory (``view`` the mapped tensor), else from the tree's listing (``view`` None: read over REST)."""
        pinned = self.pin(rank)
        entry = None if pinned is None else next((e for e in pinned["entries"] if e["path"] == key), None)
        path = "%s/%s" % (self.rank_dir(rank), key)
        if entry is None:
            entry = self.listed(rank).get(path)
        if entry is None or entry.get("type") != "tensor":
            raise TenplexError("%s: the saved tree does not hold this tensor" % path)
        m = shm.mapping_of(entry) if entry.get("file") else None
        return entry["dtype"], list(entry["shape"]), None if m is None else shm.torch_view_of(m, entry)

    def pin(self, rank):
        """The pin of the saved rank's tree on this host's daemon, or None (another daemon, no shared
        memory here, or the rank loads something else now: then its tensors are read over REST)."""
        c = self.holder(rank)
        if not self.shared or c is not self.client or not shm.available(c):
            return None
        if rank not in self._pins:
            pinned = shm.pin(c, self.job, rank)
            if pinned is not None and (pinned.get("source") != "generation"
                                       or pinned["path"].rstrip("/") != self.rank_dir(rank)):
                shm.release(c, self.job, pinned["id"])
                pinned = None
            self._pins[rank] = pinned
        return self._pins[rank]

    def unpin(self):
        for pinned in self._pins.values():
            if pinned is not None:
                shm.release(self.client, self.job, pinned["id"])
        self._pins = {}

    def read_range(self, rank, key, offsets, lengths, target):
        """The box ``offsets``/``lengths`` of a saved rank's tensor, read over REST into ``target`` (a
        torch tensor of that shape and the stored dtype)."""
        c, path = self.holder(rank), "%s/%s" % (self.rank_dir(rank), key)
        rng = ",".join("%d:%d" % (o, o + n) for o, n in zip(offsets, lengths))
        r = c.request("GET", routes.tensors_route(path), params={"range": rng} if rng else None, stream=True,
                      headers=c.read_headers())
        try:
            short = r.headers.get("x-tensor-dtype", "")
            dims = [int(d) for d in r.headers.get("x-tensor-dims", "").split(",") if d]
            if dims != list(lengths):
                raise TenplexError("%s: the daemon answered shape %s for range %s" % (path, dims, rng))
            a = np.empty(lengths, dtype=tree_codec.numpy_dtype(short))
            view = tree_codec.byte_view(a)
            body_into(r, view, path)
        finally:
            r.close()
        c.verify(path, r, view)
        got = torch_values.from_numpy(a, short)
        if got.dtype != target.dtype:
            raise TenplexError("%s: stored as %s, loaded into %s" % (path, got.dtype, target.dtype))
        target.copy_(got)
