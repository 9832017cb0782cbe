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
import logging
import pickletools
import zipfile

import numpy as np
import torch
from torch.distributed.checkpoint import StorageReader
from torch.distributed.checkpoint.planner import LoadItemType

from .errors import NoCheckpoint, TenplexError
from .generation_source import GenerationSource, torch_dtype
from .rank_env import job_name
from .wire import dcp_metadata, routes
from .wire.http_client import client_for
from .wire.transfer import read_file

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
        self._source = GenerationSource(client_for(client, addr, token), self.job, daemons)
        self._storage = {}

    def reset(self, checkpoint_id=None):
        self._storage = {}

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return False  # the checkpoint is named by job and step, not by a path

    @logged("loading")
    def read_metadata(self):
        """The metadata in the last rank of the generation (the rank the coordinator sealed last)."""
        src = self._source
        src.open(self.step)
        rank = src.world - 1
        path = "%s/%s.bytes" % (src.rank_dir(rank), METADATA)
        c = src.holder(rank)
        if c.request("HEAD", routes.files_route(path), ok=(200, 404)).status_code == 404:
            raise NoCheckpoint("generation %d of job %r holds no DCP checkpoint (no %s in rank %d)"
                               % (src.step, self.job, METADATA, rank))
        metadata = dcp_metadata.decode(read_file(c, path))
        self._check_trees(metadata)
        return metadata

    def _check_trees(self, metadata):
        """Checks the metadata against the saved trees before DCP sizes anything by it: every tensor's
        chunks tile its size, and each is stored, in a rank of the generation, with its dtype and sizes;
        every value is a stored file."""
        from torch.distributed.checkpoint.metadata import TensorStorageMetadata
        stored, world = {}, self._source.world
        for index, where in metadata.storage_data.items():
            if not 0 <= where["rank"] < world:
                raise TenplexError("DCP metadata of job %r places %s in rank %d of a generation of %d ranks"
                                   % (self.job, index.fqn, where["rank"], world))
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
                if list(e["shape"]) != list(ch.sizes) or torch_dtype(e["dtype"]) != m.properties.dtype:
                    raise TenplexError("DCP metadata of job %r: the chunk of %s at %s is %s %s, stored as %s %s"
                                       % (self.job, fqn, list(ch.offsets), m.properties.dtype, list(ch.sizes),
                                          e["dtype"], e["shape"]))

    def _entry(self, where, fqn, kind):
        """The listing entry of a stored item (a ``kind``), or a refusal naming ``fqn``."""
        src = self._source
        e = None if where is None else src.listed(where["rank"]).get("%s/%s" % (src.rank_dir(where["rank"]), where["key"]))
        if e is None or e.get("type") != kind:
            raise TenplexError("DCP metadata of job %r: %s is not stored as a %s where the metadata says" % (self.job, fqn, kind))
        return e

    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        self._storage = metadata.storage_data

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    @logged("loading")
    def read_data(self, plan, planner):
        try:
            for item, value in [(item, self._checked(item, planner)) for item in plan.items]:
                if item.type == LoadItemType.BYTE_IO:
                    planner.load_bytes(item, io.BytesIO(value))
                    continue
                target, rank, key, view = value
                if view is None:
                    self._source.read_range(rank, key, item.storage_offsets, list(item.lengths), target)
                else:
                    target.copy_(view)
                planner.commit_tensor(item, target)
        finally:
            self._source.unpin()
        return done(None)

    def _checked(self, item, planner):
        """What loading ``item`` takes, checked before anything is copied: a value's checked bytes, or
        ``(target, saved rank, key, shared-memory view or None)`` for a tensor."""
        src = self._source
        where = self._storage.get(item.storage_index)
        if where is None:
            raise TenplexError("DCP metadata of job %r names no stored item for %s" % (self.job, item.storage_index))
        rank, key = where["rank"], where["key"]
        if not 0 <= rank < src.world:
            raise TenplexError("DCP metadata of job %r places %s in rank %d of a generation of %d ranks"
                               % (self.job, item.storage_index.fqn, rank, src.world))
        path = "%s/%s" % (src.rank_dir(rank), key)
        if item.type == LoadItemType.BYTE_IO:
            return self._checked_bytes(read_file(src.holder(rank), path), item)
        target = planner.resolve_tensor(item).detach()
        box = list(zip(item.storage_offsets, item.lengths))
        short, shape, view = src.stored(rank, key)
        if list(target.shape) != list(item.lengths) or len(shape) != len(box) or any(
                o < 0 or o + n > d for (o, n), d in zip(box, shape)):
            raise TenplexError("%s (shape %s): DCP asks for the box %s into a tensor of shape %s"
                               % (path, shape, box, list(target.shape)))
        if torch_dtype(short) != target.dtype:
            raise TenplexError("%s: stored as %s, loaded into %s" % (path, short, target.dtype))
        if view is not None:
            for dim, (o, n) in enumerate(box):
                view = view.narrow(dim, o, n)
        return target, rank, key, view

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
