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

import base64
import dataclasses
import io
import json
import os

import numpy as np

try:
    import torch
    import torch.distributed as dist
    from torch.distributed.checkpoint import StorageReader, StorageWriter
    from torch.distributed.checkpoint.staging import AsyncStager
    from torch.distributed.checkpoint.planner import LoadItemType, WriteItemType
    from torch.distributed.checkpoint.storage import WriteResult
except (ImportError, AttributeError) as _e:  # torch 1.13 on Python 3.11: DCP does not import
    raise ImportError("tenplex.dcp needs torch.distributed.checkpoint of torch 2.x (%s)" % _e) from None

from . import checkpoint, dcp_stage
from .errors import NoCheckpoint, TenplexError
from .rank_env import job_name
from .stop import generations
from .wire import dcp_metadata, routes, torch_values, tree_codec
from .wire import shared_memory as shm
from .wire.http_client import Client, base_url, client_for
from .wire.transfer import body_into, read_file

METADATA = "dcp_metadata"

__all__ = ["Writer", "Reader"]


def _done(value):
    f = torch.futures.Future()
    f.set_result(value)
    return f


class Writer(StorageWriter, AsyncStager):
    """Saves a DCP checkpoint as step ``step`` of ``job`` (default ``TENPLEX_JOB``). ``shared``, ``client``,
    ``addr`` and ``token`` are :func:`tenplex.save`'s. For ``dcp.async_save`` it is also DCP's stager: the
    state is staged straight into the daemon's shared memory (:mod:`tenplex.dcp_stage`); ``process_group``
    is the group that ``async_save`` is given (default: the default group)."""

    _synchronize_after_execute = False  # staging is done when stage() returns

    def __init__(self, job=None, step=None, client=None, addr=None, token=None, shared=None, process_group=None):
        super().__init__()
        if step is None or type(step) is not int or step < 0:
            raise ValueError("tenplex.dcp.Writer needs step=<the training step>, a non-negative int (got %r)" % (step,))
        self.job = job_name(job)
        self.step = step
        self.shared = shared
        self.process_group = process_group
        self._client = client_for(client, addr, token)
        self._world = None
        self._staged = None
        self.staged_via = None  # where stage() put the state: "shared_memory" or "host"

    def reset(self, checkpoint_id=None):
        self._world = None

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return False  # the checkpoint is named by job and step, not by a path

    def storage_meta(self):
        return None

    def stage(self, state_dict):
        """The state for ``async_save`` to save: its tensors copied into the daemon's shared memory (when
        usable from here, else into host memory), so that training may change its own at once."""
        self._release_staged()
        if self.shared is not False:
            rank = dist.get_rank(self.process_group) if dist.is_available() and dist.is_initialized() else 0
            got = dcp_stage.stage(self._client, self.job, rank, state_dict)
            if got is not None:
                state_dict, self._staged = got
                self.staged_via = "shared_memory"
                return state_dict
        self.staged_via = "host"
        return dcp_stage.stage_in_host(state_dict)

    def synchronize_staging(self):
        pass  # stage() copies before it returns

    def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
        pass

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        """Gives every rank its index and the number of ranks."""
        return [dataclasses.replace(p, storage_data={"rank": i, "world": len(plans)}) for i, p in enumerate(plans)]

    def write_data(self, plan, planner):
        """Saves and seals the rank's tensors as rank ``rank`` of a generation of ``world + 1`` ranks (the
        last holds the metadata); values that are not tensors go to the coordinator in the results."""
        rank, world = plan.storage_data["rank"], plan.storage_data["world"]
        self._world = world
        results, tensors = [], []
        for n, item in enumerate(plan.items):
            data = planner.resolve_data(item)
            if item.type == WriteItemType.BYTE_IO:
                value = bytes(data.getbuffer())
                results.append(WriteResult(index=item.index, size_in_bytes=len(value),
                                           storage_data={"bytes": base64.b64encode(value).decode("ascii")}))
            else:
                tensors.append((item, "t%d" % n, data.detach()))
        staged, self._staged = self._staged, None
        keys = None
        if staged is not None and staged.rank == rank:
            keys = staged.keys_for([t for _, _, t in tensors])
        if keys is not None:
            staged.commit(self.step, world + 1)
        else:
            if staged is not None:
                staged.release()
            state = {name: t for _, name, t in tensors}
            keys = [tree_codec.flatten({name: t}, False)[0][0] for _, name, t in tensors]
            checkpoint.save_unconfigured(state or None, self.job, self.step, rank, world + 1, self._client, self.shared)
        results += [WriteResult(index=item.index, size_in_bytes=t.numel() * t.element_size(),
                                storage_data={"rank": rank, "key": key}) for (item, _, t), key in zip(tensors, keys)]
        return _done(results)

    def finish(self, metadata, results):
        """Writes the values that are not tensors and the metadata as the last rank, and seals it: the
        generation is complete only now."""
        meta_rank = self._world
        files, where = {}, {}
        for rs in results:
            for r in rs:
                if "bytes" in r.storage_data:
                    name = "b%d" % len(files)
                    files[name] = base64.b64decode(r.storage_data["bytes"])
                    where[r.index] = {"rank": meta_rank, "key": tree_codec.flatten({name: b""}, False)[0][0]}
                else:
                    where[r.index] = r.storage_data
        files[METADATA] = dcp_metadata.encode(metadata, where)
        checkpoint.save_unconfigured(files, self.job, self.step, meta_rank, meta_rank + 1, self._client, self.shared)

    def _release_staged(self):
        if self._staged is not None:
            self._staged.release()
            self._staged = None


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
        self._daemons = [a for a in (daemons or []) if base_url(a) != self._client.addr]
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
        """The metadata in the last rank of the generation (the rank the coordinator sealed last)."""
        step = self._step()
        self._loaded_step = step
        self._holders = {}
        rank = int(self._generation(self._client, step)["world"]) - 1
        path = "%s/%d/%s.bytes" % (routes.generation_dir(self.job, step), rank, METADATA)
        c = self._holder(rank)
        if c.request("HEAD", routes.files_route(path), ok=(200, 404)).status_code == 404:
            raise NoCheckpoint("generation %d of job %r holds no DCP checkpoint (no %s in rank %d)"
                               % (step, self.job, METADATA, rank))
        return dcp_metadata.decode(read_file(c, path))

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
