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

try:
    import torch.distributed as dist
    from torch.distributed.checkpoint import StorageWriter
    from torch.distributed.checkpoint.staging import AsyncStager
    from torch.distributed.checkpoint.planner import WriteItemType
    from torch.distributed.checkpoint.storage import WriteResult
except (ImportError, AttributeError) as _e:  # torch 1.13 on Python 3.11: DCP does not import
    raise ImportError("tenplex.dcp needs torch.distributed.checkpoint of torch 2.x (%s)" % _e) from None

from . import checkpoint, dcp_stage
from .dcp_reader import METADATA, Reader, done, logged
from .errors import TenplexError
from .rank_env import job_name
from .wire import dcp_metadata, tree_codec
from .wire.http_client import client_for

__all__ = ["Writer", "Reader", "METADATA"]


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
        if self._staged is not None:
            raise TenplexError("this tenplex.dcp.Writer already staged a save that has not been written yet: make one "
                               "Writer per save (each names its step)")
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

    @logged("saving")
    def write_data(self, plan, planner):
        """Saves and seals the rank's tensors as rank ``rank`` of a generation of ``world + 1`` ranks (the
        last holds the metadata); values that are not tensors go to the coordinator in the results."""
        staged, self._staged = self._staged, None
        try:
            return done(self._write(plan, planner, staged))
        finally:
            if staged is not None:
                staged.release()  # after any copy out of it (a no-op once committed)

    def _write(self, plan, planner, staged):
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
        keys = staged.keys_for([t for _, _, t in tensors]) if staged is not None and staged.rank == rank else None
        if keys is not None:
            staged.commit(self.step, world + 1)
        else:  # copied (from the staged views too, which stay reserved until this is done)
            state = {name: t for _, name, t in tensors}
            keys = [tree_codec.flatten({name: t}, False)[0][0] for _, name, t in tensors]
            checkpoint.save_unconfigured(state or None, self.job, self.step, rank, world + 1, self._client, self.shared)
        return results + [WriteResult(index=item.index, size_in_bytes=t.numel() * t.element_size(),
                                      storage_data={"rank": rank, "key": key})
                          for (item, _, t), key in zip(tensors, keys)]

    @logged("saving")
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
