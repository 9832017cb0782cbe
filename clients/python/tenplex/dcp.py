"""A storage backend for ``torch.distributed.checkpoint`` (DCP): checkpoints in the tenplex daemon.

::

    import torch.distributed.checkpoint as dcp
    import tenplex.dcp

    dcp.save(state, storage_writer=tenplex.dcp.Writer(job="gpt", step=step))
    dcp.load(state, storage_reader=tenplex.dcp.Reader(job="gpt"))

Each rank of the save (its index in DCP's global plan) saves the items DCP gives it as
``/job/<job>/save/<rank>/`` and seals them as step ``step``, exactly as :func:`tenplex.save` does (shared
memory on the daemon's host, else REST, checksums as configured). The coordinator also writes the
checkpoint's metadata (as JSON: :mod:`tenplex.wire.dcp_metadata`, never a pickle) and seals last, after
every other rank has written, so the step is a complete generation only once all of it is there: a
save that fails on any rank leaves the previous generation the one that loads.

A load reads the job's latest complete generation (or ``step``). DCP's planner decides which part of
which stored chunk each element of the caller's state needs, whatever its placement now (another
world size, another mesh); each such part is one range read (``?range=``) of only those bytes, from
the daemon that holds the saved rank: this one, or one of ``daemons`` (default: ``TENPLEX_DAEMONS``),
found by the ranks each lists for the generation. No collective beyond DCP's own is added.

Values that are not tensors are kept as DCP keeps them, as ``torch.save`` bytes. A load unpickles such
bytes only when torch's restricted unpickler (``weights_only=True``) accepts them: bytes naming other
classes or functions, which could run code, are refused with :class:`TenplexError` unless the reader
was made with ``allow_pickle=True``."""

import dataclasses
import io
import json
import os

import numpy as np

try:
    import torch
    from torch.distributed.checkpoint import StorageReader, StorageWriter
    from torch.distributed.checkpoint.planner import LoadItemType, WriteItemType
    from torch.distributed.checkpoint.storage import WriteResult
except (ImportError, AttributeError) as _e:  # torch 1.13 on Python 3.11: DCP does not import
    raise ImportError("tenplex.dcp needs torch.distributed.checkpoint of torch 2.x (%s)" % _e) from None

from . import checkpoint
from .errors import NoCheckpoint, TenplexError
from .rank_env import job_name
from .stop import generations
from .wire import dcp_metadata, routes, torch_values, tree_codec
from .wire import shared_memory as shm
from .wire.http_client import Client, client_for
from .wire.transfer import body_into, read_file

METADATA = "dcp_metadata"

__all__ = ["Writer", "Reader"]


def _done(value):
    f = torch.futures.Future()
    f.set_result(value)
    return f


class Writer(StorageWriter):
    """Saves a DCP checkpoint as step ``step`` of ``job`` (default ``TENPLEX_JOB``). ``shared``, ``client``,
    ``addr`` and ``token`` are :func:`tenplex.save`'s."""

    def __init__(self, job=None, step=None, client=None, addr=None, token=None, shared=None):
        super().__init__()
        if step is None or type(step) is not int or step < 0:
            raise ValueError("tenplex.dcp.Writer needs step=<the training step>, a non-negative int (got %r)" % (step,))
        self.job = job_name(job)
        self.step = step
        self.shared = shared
        self._client = client_for(client, addr, token)
        self._coordinator = False
        self._held = None

    def reset(self, checkpoint_id=None):
        self._held = None

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return False  # the checkpoint is named by job and step, not by a path

    def storage_meta(self):
        return None

    def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
        self._coordinator = is_coordinator

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        """Gives every rank its index and the number of ranks (the generation's world)."""
        return [dataclasses.replace(p, storage_data={"rank": i, "world": len(plans)}) for i, p in enumerate(plans)]

    def write_data(self, plan, planner):
        where = plan.storage_data
        rank, world = where["rank"], where["world"]
        state, results = {}, []
        for n, item in enumerate(plan.items):
            data = planner.resolve_data(item)
            name = "t%d" % n
            if item.type == WriteItemType.BYTE_IO:
                value = bytes(data.getbuffer())
                size = len(value)
            else:
                value = data.detach()
                size = value.numel() * value.element_size()
            state[name] = value
            results.append((item.index, size, name))
        keys = {name: tree_codec.flatten({name: value}, False)[0][0] for name, value in state.items()}
        written = [WriteResult(index=i, size_in_bytes=size, storage_data={"rank": rank, "key": keys[name]})
                   for i, size, name in results]
        if self._coordinator:
            self._held = (rank, world, state)  # saved and sealed with the metadata, last
        else:
            self._save(rank, world, state)
        return _done(written)

    def finish(self, metadata, results):
        rank, world, state = self._held
        self._held = None
        where = {}
        for rs in results:
            where.update({r.index: r.storage_data for r in rs})
        state = dict(state, **{METADATA: dcp_metadata.encode(metadata, where)})
        self._save(rank, world, state)

    def _save(self, rank, world, state):
        checkpoint.save(state or None, job=self.job, step=self.step, rank=rank, world=world, client=self._client,
                        shared=self.shared)


class Reader(StorageReader):
    """Loads a DCP checkpoint from ``job``'s latest complete generation (or step ``step``)."""

    def __init__(self, job=None, step=None, client=None, addr=None, token=None, daemons=None, allow_pickle=False):
        super().__init__()
        self.job = job_name(job)
        self.step = step
        self.allow_pickle = allow_pickle
        self._client = client_for(client, addr, token)
        if daemons is None and os.environ.get("TENPLEX_DAEMONS"):
            daemons = list(json.loads(os.environ["TENPLEX_DAEMONS"]).values())
        self._daemons = [a for a in (daemons or []) if a != self._client.addr]
        self._holders = {}
        self._storage = {}
        self._loaded_step = None
        self._pins = {}

    def reset(self, checkpoint_id=None):
        self._holders = {}
        self._storage = {}

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return False

    def _step(self):
        if self.step is not None:
            return self.step
        current = generations(self.job, self._client).get("current")
        if current is None:
            raise NoCheckpoint("job %r has no complete generation at %s" % (self.job, self._client.addr))
        return int(current)

    def read_metadata(self):
        step = self._step()
        self._loaded_step = step
        info = self._generation(self._client, step)
        for rank in sorted(info.get("localRanks", [])) or [0]:
            path = "%s/%d/%s.bytes" % (routes.generation_dir(self.job, step), rank, METADATA)
            r = self._client.request("HEAD", routes.files_route(path), ok=(200, 404))
            if r.status_code == 200:
                return dcp_metadata.decode(read_file(self._client, path))
        for c in self._peers():
            for rank in sorted(self._generation(c, step).get("localRanks", [])):
                path = "%s/%d/%s.bytes" % (routes.generation_dir(self.job, step), rank, METADATA)
                if c.request("HEAD", routes.files_route(path), ok=(200, 404)).status_code == 200:
                    return dcp_metadata.decode(read_file(c, path))
        raise NoCheckpoint("generation %d of job %r holds no DCP checkpoint (no %s)" % (step, self.job, METADATA))

    def _generation(self, c, step):
        info = generations(self.job, c)
        for g in info.get("generations", []):
            if int(g.get("step", -1)) == step:
                if not g.get("complete"):
                    raise NoCheckpoint("generation %d of job %r is not complete" % (step, self.job))
                return g
        if c is self._client:
            raise NoCheckpoint("job %r has no generation %d at %s" % (self.job, step, c.addr))
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
        """The client of the daemon that holds the saved ``rank`` of the step loaded."""
        if rank in self._holders:
            return self._holders[rank]
        for c in [self._client] + self._peers():
            ranks = set(self._generation(c, self._loaded_step).get("localRanks", [rank] if c is self._client else []))
            if rank in ranks:
                self._holders[rank] = c
                return c
        raise NoCheckpoint("no daemon known here holds rank %d of generation %d of job %r (known: %s)"
                           % (rank, self._loaded_step, self.job, [self._client.addr] + self._daemons))

    def read_data(self, plan, planner):
        base = routes.generation_dir(self.job, self._loaded_step)
        try:
            for item in plan.items:
                where = self._storage.get(item.storage_index)
                if where is None:
                    raise TenplexError("DCP metadata of job %r names no stored item for %s"
                                       % (self.job, item.storage_index))
                c = self._holder(where["rank"])
                path = "%s/%d/%s" % (base, where["rank"], where["key"])
                if item.type == LoadItemType.BYTE_IO:
                    planner.load_bytes(item, io.BytesIO(self._checked_bytes(read_file(c, path), item)))
                    continue
                target = planner.resolve_tensor(item).detach()
                if list(target.shape) != list(item.lengths):
                    raise TenplexError("%s: DCP asks for %s elements into a tensor of shape %s"
                                       % (path, list(item.lengths), list(target.shape)))
                source = self._mapped(c, where["rank"], where["key"])
                if source is None:
                    self._read_range(c, path, item, target)
                else:
                    self._copy_range(path, source, item, target)
                planner.commit_tensor(item, target)
        finally:
            self._unpin()
        return _done(None)

    def _mapped(self, c, rank, key):
        """The stored tensor ``key`` of ``rank`` as a view of the daemon's shared memory, or ``None``
        (another daemon, no shared memory here, or not in shared memory: then it is read over REST)."""
        if c is not self._client or not shm.available(c):
            return None
        if rank not in self._pins:
            pinned = shm.pin(c, self.job, rank)
            want = "%s/%d" % (routes.generation_dir(self.job, self._loaded_step), rank)
            if pinned is not None and (pinned.get("source") != "generation" or pinned["path"].rstrip("/") != want):
                shm.release(c, self.job, pinned["id"])  # the rank loads something else now: read its ranges over REST
                pinned = None
            self._pins[rank] = pinned
        pinned = self._pins[rank]
        entry = None if pinned is None else next((e for e in pinned["entries"] if e["path"] == key), None)
        m = None if entry is None else shm.mapping_of(entry)
        return None if m is None else (entry, shm.torch_view_of(m, entry))

    def _unpin(self):
        for pinned in self._pins.values():
            if pinned is not None:
                shm.release(self._client, self.job, pinned["id"])
        self._pins = {}

    def _copy_range(self, path, source, item, target):
        entry, view = source
        if view is None or view.dtype != target.dtype:
            raise TenplexError("%s: stored as %s, loaded into %s" % (path, entry["dtype"], target.dtype))
        for dim, (o, n) in enumerate(zip(item.storage_offsets, item.lengths)):
            if o + n > view.shape[dim]:
                raise TenplexError("%s: DCP asks for %d:%d of dimension %d, which has %d"
                                   % (path, o, o + n, dim, view.shape[dim]))
            view = view.narrow(dim, o, n)
        target.copy_(view)

    def _checked_bytes(self, value, item):
        if not self.allow_pickle:
            try:
                torch.load(io.BytesIO(value), weights_only=True)
            except Exception as e:  # noqa: BLE001 (any refusal of the restricted unpickler)
                raise TenplexError("%s of job %r is a pickle that torch's restricted unpickler refuses (%s); it could "
                                   "run code when loaded. Load with tenplex.dcp.Reader(..., allow_pickle=True) only "
                                   "if you trust whoever saved it" % (item.dest_index.fqn, self.job, e)) from None
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
