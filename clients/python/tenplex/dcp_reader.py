"""The reading side of :mod:`tenplex.dcp`: a DCP ``StorageReader`` over a job's generation.

A load checks everything it can before it changes anything in the caller's state: every item's place
in the metadata, the saved rank (within the generation) and the daemon that holds it, the stored
tensor's dtype and shape against the caller's tensor and the box DCP asks for, and every value that is
not a tensor (read, and refused when it is a pickle that could run code or allocate what it names). Only
then are the items copied: from the daemon's shared memory where the saved rank's tree is pinned on this
host, else as one range read each. A read that fails while copying (a daemon gone) can still leave the
state partly loaded, as with DCP's own readers; load again."""

import functools
import io
import json
import logging
import os
import pickletools
import zipfile

import numpy as np
import torch
from torch.distributed.checkpoint import StorageReader
from torch.distributed.checkpoint.planner import LoadItemType

from .errors import NoCheckpoint, TenplexError
from .rank_env import job_name
from .stop import generations
from .wire import dcp_metadata, routes, torch_values, tree_codec
from .wire import shared_memory as shm
from .wire.http_client import Client, base_url, client_for
from .wire.transfer import body_into, listing, read_file

log = logging.getLogger("tenplex")

METADATA = "dcp_metadata"
_MAX_PICKLE = 64 << 20
_ALLOCATORS = {"bytearray"}  # on torch's weights_only allowlist, and bytearray(N) allocates N bytes


def done(value):
    f = torch.futures.Future()
    f.set_result(value)
    return f


def logged(what):
    """Logs an error before DCP sees it: DCP gathers a rank's exception with its traceback, which
    Python 3.13 cannot pickle, so the reason would otherwise reach the user as ``cannot pickle code objects``."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(self, *args, **kwargs):
            try:
                return fn(self, *args, **kwargs)
            except Exception as e:
                log.error("tenplex.dcp: %s job %r failed: %s: %s", what, self.job, type(e).__name__, e)
                raise
        return run
    return wrap


def _daemons_from_env():
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


def _torch_dtype(short):
    return torch_values.from_numpy(np.empty(0, dtype=tree_codec.numpy_dtype(short)), short).dtype


def refuse_allocating_pickle(value, name):
    """Refuses ``torch.save`` bytes that are not a zip with one pickle, or whose pickle names an allocator
    that the restricted unpickler allows (``bytearray(N)``: a few bytes that ask for N)."""
    try:
        z = zipfile.ZipFile(io.BytesIO(value))
        pickles = [i for i in z.infolist() if i.filename.endswith("data.pkl")]
        if len(pickles) != 1 or pickles[0].file_size > _MAX_PICKLE:
            raise ValueError("%d pickles" % len(pickles))
        ops = list(pickletools.genops(z.read(pickles[0])))
    except (zipfile.BadZipFile, ValueError, KeyError, EOFError) as e:
        raise TenplexError("%s is not torch.save bytes with one pickle of at most %d bytes (%s)"
                           % (name, _MAX_PICKLE, e)) from None
    for op, arg, _ in ops:
        if isinstance(arg, str) and (arg in _ALLOCATORS or op.name == "GLOBAL" and arg.split(" ")[-1] in _ALLOCATORS):
            raise TenplexError("%s is a pickle that names %s, which allocates what the bytes ask for; load with "
                               "allow_pickle=True only if you trust whoever saved it" % (name, arg.split(" ")[-1]))


def _reason(e):
    """The line of torch's refusal that names what it refused."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return next((ln for ln in lines if "Unsupported" in ln or "WeightsUnpickler" in ln), lines[0] if lines else "")[:300]


class Reader(StorageReader):
    """Loads a DCP checkpoint from ``job``'s latest complete generation (or step ``step``). Saved ranks
    held by other daemons are found among ``daemons`` (``host:port`` or URLs; default the addresses in
    ``TENPLEX_DAEMONS``). ``allow_pickle=True`` unpickles values the restricted unpickler refuses."""

    def __init__(self, job=None, step=None, client=None, addr=None, token=None, daemons=None, allow_pickle=False):
        super().__init__()
        if step is not None and (type(step) is not int or step < 0):
            raise ValueError("tenplex.dcp.Reader: step must be a non-negative int or None (got %r)" % (step,))
        self.job = job_name(job)
        self.step = step
        self.allow_pickle = allow_pickle
        self._client = client_for(client, addr, token)
        daemons = _daemons_from_env() if daemons is None else list(daemons)
        self._daemons = [a for a in daemons if base_url(a) != self._client.addr]
        self._holders, self._storage, self._pins, self._listings = {}, {}, {}, {}
        self._loaded_step = self._world = None

    def reset(self, checkpoint_id=None):
        self._holders, self._storage, self._listings = {}, {}, {}

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return False  # the checkpoint is named by job and step, not by a path

    @logged("loading")
    def read_metadata(self):
        """The metadata in the last rank of the generation (the rank the coordinator sealed last)."""
        step = self.step
        if step is None:
            step = generations(self.job, self._client).get("current")
            if step is None:
                raise NoCheckpoint("job %r has no complete generation at %s" % (self.job, self._client.addr))
        self._loaded_step = int(step)
        self._holders, self._listings = {}, {}
        self._world = int(self._generation(self._client)["world"])
        rank = self._world - 1
        path = "%s/%d/%s.bytes" % (routes.generation_dir(self.job, self._loaded_step), rank, METADATA)
        c = self._holder(rank)
        if c.request("HEAD", routes.files_route(path), ok=(200, 404)).status_code == 404:
            raise NoCheckpoint("generation %d of job %r holds no DCP checkpoint (no %s in rank %d)"
                               % (self._loaded_step, self.job, METADATA, rank))
        metadata = dcp_metadata.decode(read_file(c, path))
        self._check_trees(metadata)
        return metadata

    def _check_trees(self, metadata):
        """Checks the metadata against the saved trees before DCP sizes anything by it: every tensor's
        chunks tile its size, and each is stored, in a rank of the generation, with its dtype and sizes;
        every value is a stored file."""
        from torch.distributed.checkpoint.metadata import TensorStorageMetadata
        stored = {}
        for index, where in metadata.storage_data.items():
            if not 0 <= where["rank"] < self._world:
                raise TenplexError("DCP metadata of job %r places %s in rank %d of a generation of %d ranks"
                                   % (self.job, index.fqn, where["rank"], self._world))
            stored[(index.fqn, None if index.offset is None else tuple(index.offset))] = where
        for fqn, m in metadata.state_dict_metadata.items():
            if not isinstance(m, TensorStorageMetadata):
                self._entry(stored.get((fqn, None)), fqn, "file")
                continue
            volume = sum(int(np.prod(ch.sizes, dtype=object)) for ch in m.chunks)
            if volume != int(np.prod(list(m.size), dtype=object)):
                raise TenplexError("DCP metadata of job %r: the chunks of %s hold %d elements, its size %s asks "
                                   "for %d" % (self.job, fqn, volume, list(m.size), int(np.prod(list(m.size), dtype=object))))
            for ch in m.chunks:
                e = self._entry(stored.get((fqn, tuple(ch.offsets))), fqn, "tensor")
                if list(e["shape"]) != list(ch.sizes) or _torch_dtype(e["dtype"]) != m.properties.dtype:
                    raise TenplexError("DCP metadata of job %r: the chunk of %s at %s is %s %s, stored as %s %s"
                                       % (self.job, fqn, list(ch.offsets), m.properties.dtype, list(ch.sizes),
                                          e["dtype"], e["shape"]))

    def _entry(self, where, fqn, kind):
        """The listing entry of a stored item (a ``kind``), or a refusal naming ``fqn``."""
        e = None if where is None else self._listed(where["rank"]).get(
            "%s/%d/%s" % (routes.generation_dir(self.job, self._loaded_step), where["rank"], where["key"]))
        if e is None or e.get("type") != kind:
            raise TenplexError("DCP metadata of job %r: %s is not stored as a %s where the metadata says" % (self.job, fqn, kind))
        return e

    def _listed(self, rank):
        """The saved rank's tree, by absolute path (listed once per load)."""
        if rank not in self._listings:
            prefix = "%s/%d" % (routes.generation_dir(self.job, self._loaded_step), rank)
            self._listings[rank] = {e["path"]: e for e in listing(self._holder(rank), prefix)}
        return self._listings[rank]

    def _generation(self, c):
        for g in generations(self.job, c).get("generations", []):
            if int(g.get("step", -1)) == self._loaded_step:
                if not g.get("complete"):
                    raise NoCheckpoint("generation %d of job %r is not complete" % (self._loaded_step, self.job))
                return g
        if c is self._client:
            raise NoCheckpoint("job %r has no generation %d at %s" % (self.job, self._loaded_step, c.addr))
        return {}

    def _peers(self):
        return [Client(a, self._client.token, self._client.timeout, self._client.ca, self._client.checksums)
                for a in self._daemons]

    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        self._storage = metadata.storage_data

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    def _holder(self, rank):
        """The client of the daemon that holds the saved ``rank`` of the step loaded (a daemon that
        cannot be reached is passed over: it may be the one that failed)."""
        if rank in self._holders:
            return self._holders[rank]
        unreachable = []
        for c in [self._client] + self._peers():
            try:
                ranks = self._generation(c).get("localRanks", [rank] if c is self._client else [])
            except TenplexError as e:
                if c is self._client:
                    raise
                unreachable.append("%s (%s)" % (c.addr, e))
                continue
            if rank in ranks:
                self._holders[rank] = c
                return c
        raise NoCheckpoint("no daemon known here holds rank %d of generation %d of job %r (asked: %s%s)"
                           % (rank, self._loaded_step, self.job, [self._client.addr] + self._daemons,
                              "; unreachable: " + ", ".join(unreachable) if unreachable else ""))

    @logged("loading")
    def read_data(self, plan, planner):
        try:
            for item, value in [(item, self._checked(item, planner)) for item in plan.items]:
                if item.type == LoadItemType.BYTE_IO:
                    planner.load_bytes(item, io.BytesIO(value))
                    continue
                target, c, path, view = value
                if view is None:
                    self._read_range(c, path, item, target)
                else:
                    target.copy_(view)
                planner.commit_tensor(item, target)
        finally:
            self._unpin()
        return done(None)

    def _checked(self, item, planner):
        """What loading ``item`` takes, checked before anything is copied: a value's checked bytes, or
        ``(target, client, path, shared-memory view or None)`` for a tensor."""
        where = self._storage.get(item.storage_index)
        if where is None:
            raise TenplexError("DCP metadata of job %r names no stored item for %s" % (self.job, item.storage_index))
        rank, key = where["rank"], where["key"]
        if not 0 <= rank < self._world:
            raise TenplexError("DCP metadata of job %r places %s in rank %d of a generation of %d ranks"
                               % (self.job, item.storage_index.fqn, rank, self._world))
        c = self._holder(rank)
        path = "%s/%d/%s" % (routes.generation_dir(self.job, self._loaded_step), rank, key)
        if item.type == LoadItemType.BYTE_IO:
            return self._checked_bytes(read_file(c, path), item)
        target = planner.resolve_tensor(item).detach()
        box = list(zip(item.storage_offsets, item.lengths))
        short, shape, view = self._stored(c, rank, key, path)
        if list(target.shape) != list(item.lengths) or len(shape) != len(box) or any(
                o < 0 or o + n > d for (o, n), d in zip(box, shape)):
            raise TenplexError("%s (shape %s): DCP asks for the box %s into a tensor of shape %s"
                               % (path, shape, box, list(target.shape)))
        if _torch_dtype(short) != target.dtype:
            raise TenplexError("%s: stored as %s, loaded into %s" % (path, short, target.dtype))
        if view is not None:
            for dim, (o, n) in enumerate(box):
                view = view.narrow(dim, o, n)
        return target, c, path, view

    def _stored(self, c, rank, key, path):
        """``(dtype, shape, view)`` of a stored tensor: from the pin of the rank's tree in shared memory
        (``view`` the mapped tensor), else from the tree's listing (``view`` None: read over REST)."""
        pinned = self._pin(c, rank)
        entry = None if pinned is None else next((e for e in pinned["entries"] if e["path"] == key), None)
        if entry is None:
            entry = self._listed(rank).get(path)
        if entry is None or entry.get("type") != "tensor":
            raise TenplexError("%s: the DCP metadata names a tensor that the saved tree does not hold" % path)
        m = shm.mapping_of(entry) if entry.get("file") else None
        return entry["dtype"], list(entry["shape"]), None if m is None else shm.torch_view_of(m, entry)

    def _pin(self, c, rank):
        """The pin of the saved rank's tree on this host's daemon, or None (another daemon, no shared
        memory here, or the rank loads something else now: then its tensors are read over REST)."""
        if c is not self._client or not shm.available(c):
            return None
        if rank not in self._pins:
            pinned = shm.pin(c, self.job, rank)
            want = "%s/%d" % (routes.generation_dir(self.job, self._loaded_step), rank)
            if pinned is not None and (pinned.get("source") != "generation" or pinned["path"].rstrip("/") != want):
                shm.release(c, self.job, pinned["id"])
                pinned = None
            self._pins[rank] = pinned
        return self._pins[rank]

    def _unpin(self):
        for pinned in self._pins.values():
            if pinned is not None:
                shm.release(self._client, self.job, pinned["id"])
        self._pins = {}

    def _checked_bytes(self, value, item):
        if not self.allow_pickle:
            name = "%s of job %r" % (item.dest_index.fqn, self.job)
            refuse_allocating_pickle(value, name)
            try:
                torch.load(io.BytesIO(value), weights_only=True)
            except Exception as e:  # noqa: BLE001 (any refusal of the restricted unpickler)
                raise TenplexError("%s is a pickle that torch's restricted unpickler refuses (%s); it could run code "
                                   "when loaded. Load with tenplex.dcp.Reader(..., allow_pickle=True) only if you "
                                   "trust whoever saved it" % (name, _reason(e))) from None
        return value

    def _read_range(self, c, path, item, target):
        lengths = list(item.lengths)
        rng = ",".join("%d:%d" % (o, o + n) for o, n in zip(item.storage_offsets, lengths))
        r = c.request("GET", routes.tensors_route(path), params={"range": rng} if rng else None, stream=True,
                      headers=c.read_headers())
        try:
            short = r.headers.get("x-tensor-dtype", "")
            dims = [int(d) for d in r.headers.get("x-tensor-dims", "").split(",") if d]
            if dims != lengths:
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
