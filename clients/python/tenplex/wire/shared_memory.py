"""Saves and loads through the daemon's shared memory, for a trainer on the daemon's host.

A save reserves a segment laid out for the rank's tensors (``POST .../shared/saves/<rank>``), copies
every tensor straight into its mapping (from the GPU too: the mapping is registered with CUDA, so
the copy is one DMA with no staging buffer), and commits (``.../<id>/commit``): the daemon publishes
the whole rank at once and seals it. The daemon hands the same segments out again once older
generations free them, and this module keeps their mappings, so steady-state saves touch no new
pages. A load pins the rank's tree (``POST .../shared/loads/<rank>``), maps its segments read-only
and copies each tensor into the caller's existing tensor, or a new one.

A segment is a sealed memory file of the daemon's process, which this process opens as
``/proc/<daemon pid>/fd/<n>`` (the ``file`` of a reservation or pin): its size is fixed and all of
it allocated, so ``ftruncate`` on it fails (``EPERM``), and only the daemon's user (and root) can
open it. Mappings are page-aligned, as ``cudaHostRegister`` wants.

Everything falls back to REST (the caller's job) when the daemon has no shared memory, or its
segments cannot be opened here (another host, another user, another pid namespace): :func:`available`
then says no for this client. ``TENPLEX_SHM=0`` turns the path off."""

import logging
import math
import mmap
import os
import sys
import threading
import warnings

import numpy as np

from . import tree_codec, routes, torch_values
from ..errors import NoCheckpoint, TenplexError
from .http_client import ERROR_CODE_HEADER

log = logging.getLogger("tenplex")

MAGIC = b"TENPLEX-SHM 1\n"
# A save's mapping has its page tables filled in one call (the daemon allocated every page of a segment):
# the copy into it then took half the time (bench/python/page_costs.py). A load's read-only mapping is
# not populated: there it measured slower.
MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # Linux, Python 3.10 and later; else not asked
MAX_MAPPINGS = 8
LEASE_SECONDS = 600
_TORCH_SHORT = {}
_ITEMSIZE = {}
_BY_SHORT = {}
_maps = {}
_lock = threading.Lock()


class _NotUsable(Exception):
    """The daemon's segment cannot be used from this process."""


def process_start():
    """This process's start time as the daemon checks it (field 22 of ``/proc/self/stat``), or 0."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read().decode("ascii")
        return int(stat[stat.rindex(")") + 2:].split(" ")[19])
    except (OSError, ValueError, IndexError):
        return 0


def enabled():
    """Whether shared memory is not turned off in the environment (``TENPLEX_SHM=0``)."""
    return os.environ.get("TENPLEX_SHM", "1").lower() not in ("0", "off", "false", "no")


def available(c):
    """Whether to try shared memory with the client ``c`` (not turned off, and not found unusable)."""
    if not enabled():
        return False
    return getattr(c, "_shm_usable", True)


def _unusable(c, why):
    if getattr(c, "_shm_usable", True):
        log.info("tenplex: shared memory of %s not usable here (%s); saving and loading over REST", c.addr, why)
    c._shm_usable = False
    c._shm_why = why


# ---------------------------------------------------------------- mappings

class _Mapping:
    """One segment file mapped into this process; writable when a save maps it."""

    def __init__(self, path, nonce, capacity, writable):
        fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
        try:
            prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
            self.mm = mmap.mmap(fd, capacity, mmap.MAP_SHARED | (MAP_POPULATE if writable else 0), prot)
        finally:
            os.close(fd)
        header = MAGIC + nonce.encode("ascii") + b"\n"
        if self.mm[:len(header)] != header:
            self.mm.close()
            raise _NotUsable("%s is not the segment the daemon named" % path)
        self.writable = writable
        self.registered = None
        self._anchor = None
        self._bytes = None

    def torch_bytes(self):
        """The whole mapping as one uint8 torch tensor (made once: views of it are cheap)."""
        if self._bytes is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a read-only mapping warns; loads only read from it
                self._bytes = torch_values.torch.frombuffer(self.mm, dtype=torch_values.torch.uint8)
        return self._bytes

    def register_cuda(self):
        """Registers the mapping with CUDA (page-locked), so device copies are direct DMA; once.
        Read-only mappings ask for a read-only registration. Failure only costs speed."""
        if self.registered is not None:
            return self.registered
        self.registered = False
        try:
            cudart = torch_values.torch.cuda.cudart()
            anchor = np.frombuffer(self.mm, dtype=np.uint8)
            flags = 0 if self.writable else 8  # cudaHostRegisterReadOnly
            err = cudart.cudaHostRegister(anchor.ctypes.data, len(self.mm), flags)
            self.registered = int(err) == 0
            if self.registered:
                self._anchor = anchor
            else:
                log.info("tenplex: cudaHostRegister of %d bytes failed (%s); device copies are staged", len(self.mm), err)
        except Exception as e:  # noqa: BLE001 - registration is an optimisation
            log.info("tenplex: cudaHostRegister failed: %s", e)
        return self.registered

    def close(self):
        try:
            if self.registered:
                torch_values.torch.cuda.cudart().cudaHostUnregister(self._anchor.ctypes.data)
            self._anchor = None
            self._bytes = None
            self.mm.close()
        except (BufferError, Exception):  # noqa: BLE001 - views still alive: the GC unmaps it later
            pass


def _mapping(path, nonce, capacity, writable):
    """The cached mapping of a segment (a writable one serves reads too), else a new one."""
    with _lock:
        m = _maps.pop((path, nonce, capacity), None)
        if m is not None and (m.writable or not writable):
            _maps[(path, nonce, capacity)] = m  # most recently used last
            return m
        if m is not None:
            m.close()
        try:
            m = _Mapping(path, nonce, capacity, writable)
        except OSError as e:
            raise _NotUsable("cannot map %s: %s" % (path, e)) from None
        _maps[(path, nonce, capacity)] = m
        while len(_maps) > MAX_MAPPINGS:
            _maps.pop(next(iter(_maps))).close()
        return m


# ---------------------------------------------------------------- tensors in a mapping

def _torch_short(dtype):
    import torch
    if not _TORCH_SHORT:
        _TORCH_SHORT.update({torch.bool: "bool", torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16",
                             torch.int32: "i32", torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16",
                             torch.float32: "f32", torch.float64: "f64", torch.complex64: "c64",
                             torch.complex128: "c128"})
    if dtype not in _TORCH_SHORT:
        raise TypeError("torch dtype %s cannot be stored" % dtype)
    return _TORCH_SHORT[dtype]


def _torch_dtype(short):
    if not _BY_SHORT:
        _torch_short(torch_values.torch.float32)
        _BY_SHORT.update({v: k for k, v in _TORCH_SHORT.items()})
    return _BY_SHORT.get(short)


def spec(obj):
    """``(dtype short name, shape, nbytes)`` of a tensor or array, without copying it."""
    if torch_values.is_tensor(obj):
        return _torch_short(obj.dtype), list(obj.shape), obj.numel() * obj.element_size()
    a = np.asarray(obj)
    return tree_codec.short_dtype(a.dtype), list(a.shape), a.nbytes


def _count(shape):
    return math.prod(shape)


def _torch_view(m, short, shape, offset):
    """The bytes at ``offset`` as a torch tensor, or ``None`` when torch lacks the dtype (or is absent)."""
    td = _torch_dtype(short) if torch_values.available() else None
    if td is None:
        return None
    size = _ITEMSIZE.get(td)
    if size is None:
        size = _ITEMSIZE[td] = torch_values.torch.empty(0, dtype=td).element_size()
    n = _count(shape) * size
    return m.torch_bytes()[offset:offset + n].view(td).view(shape)


def _np_view(m, short, shape, offset):
    return np.frombuffer(m.mm, dtype=tree_codec.numpy_dtype(short), count=_count(shape), offset=offset).reshape(shape)


def copy_in(m, offset, obj):
    """Copies one tensor or array into the mapping at ``offset`` (torch copies large tensors on
    several threads; a device tensor goes straight from the device into the registered mapping)."""
    short, shape, nbytes = spec(obj)
    if nbytes == 0:
        return
    dst = _torch_view(m, short, shape, offset)
    if dst is None:
        np.copyto(_np_view(m, short, shape, offset), np.asarray(obj))
    elif torch_values.is_tensor(obj):
        cuda = obj.is_cuda and m.register_cuda()
        dst.copy_(obj.detach(), non_blocking=bool(cuda))
    else:
        a = np.asarray(obj)  # 0-d stays 0-d (ascontiguousarray would make it 1-d)
        dst.copy_(torch_values.torch.from_numpy(a if a.flags.c_contiguous else a.copy(order="C")))


def copy_out(m, entry, into, as_torch):
    """One pinned tensor: copied into ``into`` (same dtype and shape) or into a new tensor/array."""
    short, shape, off = entry["dtype"], list(entry["shape"]), entry["offset"]
    size = entry["size"]
    if as_torch and into is None and _torch_dtype(short) is None:
        as_torch = False  # a dtype torch does not have (e.g. u16 on older torch): a numpy array
    if into is not None and torch_values.is_tensor(into):
        if size:
            cuda = into.is_cuda and m.register_cuda()
            if not cuda:
                huge_pages(into)
            into.copy_(_torch_view(m, short, shape, off), non_blocking=bool(cuda))
        return into
    if into is not None:
        if size:
            np.copyto(into, _np_view(m, short, shape, off))
        return into
    if as_torch:
        out = torch_values.torch.empty(shape, dtype=_torch_dtype(short))
        if size:
            huge_pages(out)
            out.copy_(_torch_view(m, short, shape, off))
        return out
    a = np.empty(shape, dtype=tree_codec.numpy_dtype(short))
    if size:
        np.copyto(a, _np_view(m, short, shape, off))
    return a


HUGE = 2 << 20
_madvise = []


def huge_pages(t):
    """Asks the kernel for 2 MiB pages (``MADV_HUGEPAGE``) for the whole 2 MiB blocks of a contiguous CPU
    tensor of at least two of them, before a load writes it: its first touch then faults 512 times
    less (the kernel's default for anonymous memory here is 4 KiB pages unless asked). Only a hint:
    the bytes are the same either way; ``TENPLEX_HUGEPAGES=0`` turns it off."""
    if not _madvise:
        _madvise.append(_libc_madvise())
    try:
        if _madvise[0] is None or t.device.type != "cpu" or t.layout != torch_values.torch.strided \
                or not t.is_contiguous():
            return
        start, end = t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()
        lo, hi = (start + HUGE - 1) // HUGE * HUGE, end // HUGE * HUGE
        if start and hi - lo >= HUGE:
            _madvise[0](lo, hi - lo, MADV_HUGEPAGE)  # an error (no THP in this kernel) only costs speed
    except Exception:  # noqa: BLE001 - a tensor type without plain storage: only a hint is lost
        return


MADV_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", None)


def _libc_madvise():
    """libc's ``madvise``, or ``None``: off (``TENPLEX_HUGEPAGES=0``), not Linux, or not found."""
    if os.environ.get("TENPLEX_HUGEPAGES", "1").strip().lower() in ("0", "off", "false", "no") \
            or MADV_HUGEPAGE is None or not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        f = ctypes.CDLL(None, use_errno=True).madvise
        f.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        f.restype = ctypes.c_int
        return f
    except Exception:  # noqa: BLE001 - no libc to ask: only the hint is lost
        return None


# ---------------------------------------------------------------- save

def reserve(c, job, rank, tensors, files=()):
    """Reserves and maps a segment for ``tensors`` (``(rel, obj)`` pairs) and ``files`` (``(rel,
    bytes)``): ``(reservation, mapping)``, or ``None`` when shared memory cannot be used with ``c``
    (then nothing is left reserved)."""
    body = {"pid": os.getpid(), "start": process_start(), "lease": LEASE_SECONDS,
            "tensors": [dict(zip(("path", "dtype", "shape"), (rel,) + tuple(spec(obj)[:2]))) for rel, obj in tensors],
            "files": [{"path": rel, "size": len(data)} for rel, data in files]}
    r = c.request("POST", routes.shared_saves_route(job, rank), json=body, ok=(201, 503))
    if r.status_code == 503:
        _unusable(c, r.text.strip())
        return None
    res = r.json()
    try:
        m = _mapping(res["file"], res["nonce"], res["capacity"], True)
    except _NotUsable as e:
        release(c, job, res["id"])
        _unusable(c, str(e))
        return None
    return res, m


def fill(m, res, tensors, files=()):
    """Copies every tensor and file to its place; waits for device copies to end."""
    cuda = False
    for (rel, obj), placed in zip(tensors, res["tensors"]):
        copy_in(m, placed["offset"], obj)
        cuda = cuda or (torch_values.is_tensor(obj) and obj.is_cuda)
    for (rel, data), placed in zip(files, res.get("files", [])):
        m.mm[placed["offset"]:placed["offset"] + len(data)] = data
    if cuda:
        torch_values.torch.cuda.synchronize()


def commit(c, job, rank, res, step, seal_body, order):
    """Publishes and seals a filled reservation (its entries listed in ``order``); the daemon's seal
    answer. A commit that fails ends the reservation (the daemon's answer says why)."""
    body = dict(seal_body, step=step, order=order)
    try:
        return c.request("POST", routes.shared_commit_route(job, rank, res["id"]), json=body).json()
    except BaseException:
        release(c, job, res["id"])  # already ended by the daemon in most cases: a 404 is fine
        raise


def release(c, job, handle):
    """Ends a reservation or a pin (best effort: the daemon ends it anyway when this process exits)."""
    try:
        c.request("DELETE", routes.shared_route(job, handle), ok=(200, 404))
    except Exception as e:  # noqa: BLE001 - releasing must not hide the error being handled
        log.warning("tenplex: could not release shared memory %s: %s", handle, e)


# ---------------------------------------------------------------- load

def pin(c, job, rank):
    """Pins what ``rank`` loads: the daemon's answer, or ``None`` when shared memory is not usable."""
    body = {"pid": os.getpid(), "start": process_start(), "lease": LEASE_SECONDS}
    r = c.request("POST", routes.shared_loads_route(job, rank), json=body, ok=(201, 404, 503))
    if r.status_code == 503:
        _unusable(c, r.text.strip())
        return None
    if r.status_code == 404:
        reason = r.text.strip()
        raise NoCheckpoint(NoCheckpoint.message(rank, job, reason), 404, reason,
                           r.headers.get(ERROR_CODE_HEADER))
    return r.json()


def torch_view_of(m, entry):
    """A pinned tensor's bytes in mapping ``m`` as a read-only torch view (``None`` when torch lacks its dtype)."""
    return _torch_view(m, entry["dtype"], list(entry["shape"]), entry["offset"])


def mapping_of(entry):
    """The read mapping of a pinned tensor's segment, or ``None`` when it is not in shared memory."""
    if not entry.get("file"):
        return None
    try:
        return _mapping(entry["file"], entry["nonce"], entry["capacity"], False)
    except _NotUsable as e:
        raise TenplexError("cannot map the daemon's shared memory: %s" % e) from None
