"""CRC32C (Castagnoli) of request and response bodies, the checksum the daemon sends as
``x-tensor-crc32c`` (8 lower-case hex digits) and accepts on uploads.

A native implementation is used when one is installed: the ``crc32c`` package (Debian:
``python3-crc32c``: SSE 4.2 / ARMv8 instructions where its build uses them, else a software
routine; Debian bookworm's build is software, about 1.6 GB/s here against crcmod's 0.24), or
``google_crc32c``, or ``crcmod`` with its C extension (Debian: ``python3-crcmod``; a byte-wise
table). :data:`IMPLEMENTATION` names the one in use. Without one, a pure Python table is used:
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

try:
    import crc32c as _native  # noqa: E402

    def crc32c(data, crc=0):
        return _native.crc32c(data, crc)

    FAST = True
    IMPLEMENTATION = "crc32c (%s)" % ("hardware" if getattr(_native, "hardware_based", False) else "software")
except ImportError:
    try:
        import google_crc32c as _g  # noqa: E402

        def crc32c(data, crc=0):
            return _g.extend(crc, bytes(data))

        FAST = True
        IMPLEMENTATION = "google_crc32c"
    except ImportError:
        try:
            import sys  # noqa: E402

            import crcmod.predefined  # noqa: E402

            _fun = crcmod.predefined.mkCrcFun("crc-32c")

            def crc32c(data, crc=0):
                return _fun(data, crc)

            FAST = getattr(sys.modules.get("crcmod.crcmod"), "_usingExtension", False)
            IMPLEMENTATION = "crcmod (table, %s)" % ("C extension" if FAST else "pure Python")
        except ImportError:
            crc32c = _pure
            FAST = False
            IMPLEMENTATION = "pure Python table"


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
