"""CRC32C (Castagnoli) of request and response bodies, the checksum the daemon sends as
``x-tensor-crc32c`` (8 lower-case hex digits) and accepts on uploads.

A native implementation is used when one is installed: Intel's ISA-L (Debian: ``libisal2``; its
``crc32_iscsi`` through ctypes, which releases the GIL: SSE 4.2 / PCLMUL, about 8 GB/s here), the
``crc32c`` package (Debian:
``python3-crc32c``: SSE 4.2 / ARMv8 instructions where its build uses them, else a software
routine; Debian bookworm's build is software, about 1.6 GB/s here against crcmod's 0.24), or
``google_crc32c``, or ``crcmod`` with its C extension (Debian: ``python3-crcmod``; a byte-wise
table). :data:`IMPLEMENTATION` names the one in use (``TENPLEX_NO_ISAL=1`` skips ISA-L, to compare). Without one, a pure Python table is used:
correct but slow (a few MB/s), so :data:`FAST` tells callers whether verifying large bodies is
cheap.
"""

HEADER = "x-tensor-crc32c"
WANT_HEADER = "x-want-crc32c"


def _table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


def _pure(data, crc=0):
    table = _table() if _pure.table is None else _pure.table
    _pure.table = table
    c = crc ^ 0xFFFFFFFF
    for b in memoryview(data).cast("B"):
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


_pure.table = None


def _isal():
    """ISA-L's ``crc32_iscsi`` (CRC32C), or None where libisal is not installed."""
    import ctypes
    import ctypes.util
    for name in ("libisal.so.2", ctypes.util.find_library("isal")):
        if not name:
            continue
        try:
            f = ctypes.CDLL(name).crc32_iscsi
        except (OSError, AttributeError):
            continue
        f.restype = ctypes.c_uint32
        f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        return f
    return None


def _isal_crc32c(data, crc=0):
    """CRC32C of any contiguous buffer (bytes, bytearray, memoryview, numpy array), continuing ``crc``:
    ISA-L computes with its raw register (no inversions), so the value goes in and out inverted."""
    if isinstance(data, bytes) and len(data) < 1 << 30:
        addr, n, keep = data, len(data), None
    else:
        import numpy as np
        try:
            a = np.frombuffer(data, dtype=np.uint8)
        except (TypeError, ValueError, BufferError):  # not a contiguous buffer: a copy of its bytes, in C order
            a = np.frombuffer(memoryview(data).tobytes(), dtype=np.uint8)
        addr, n, keep = a.ctypes.data, a.nbytes, a
    c = (crc ^ 0xFFFFFFFF) & 0xFFFFFFFF
    if isinstance(addr, bytes):
        return _ISAL(addr, n, c) ^ 0xFFFFFFFF
    step = 1 << 30  # its length is a C int
    for at in range(0, n, step):
        c = _ISAL(addr + at, min(step, n - at), c)
    del keep  # the buffer stayed alive (and its address valid) until here
    return c ^ 0xFFFFFFFF


def _native():
    """The first native CRC32C installed: (function, whether it is fast, its name), or None."""
    global _ISAL
    import os
    _ISAL = None if os.environ.get("TENPLEX_NO_ISAL") == "1" else _isal()
    if _ISAL is not None and _ISAL(b"123456789", 9, 0xFFFFFFFF) ^ 0xFFFFFFFF == 0xE3069283:
        return _isal_crc32c, True, "isa-l (libisal crc32_iscsi, hardware)"
    try:
        import crc32c as native
        kind = "hardware" if getattr(native, "hardware_based", False) else "software"
        return (lambda data, crc=0: native.crc32c(data, crc)), True, "crc32c (%s)" % kind
    except ImportError:
        pass
    try:
        import google_crc32c as g
        return (lambda data, crc=0: g.extend(crc, bytes(data))), True, "google_crc32c"
    except ImportError:
        pass
    try:
        import sys
        import crcmod.predefined
        fun = crcmod.predefined.mkCrcFun("crc-32c")
        fast = getattr(sys.modules.get("crcmod.crcmod"), "_usingExtension", False)
        return (lambda data, crc=0: fun(data, crc)), fast, "crcmod (table, %s)" % ("C extension" if fast else "pure Python")
    except ImportError:
        return None


_ISAL = None
_chosen = _native()
crc32c, FAST, IMPLEMENTATION = _chosen if _chosen is not None else (_pure, False, "pure Python table")


def hex8(crc):
    """The header form of a checksum."""
    return "%08x" % (crc & 0xFFFFFFFF)


def parse(value):
    """A header value as an int, or None when it is not 8 hex digits."""
    if value is None or len(value.strip()) != 8:
        return None
    try:
        return int(value.strip(), 16)
    except ValueError:
        return None
