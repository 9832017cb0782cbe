"""The Python client's checksums against a real daemon: TENPLEX_ADDR reaches it directly,
TENPLEX_CORRUPT_ADDR through a proxy that flips the first body byte of the first tensor read it
carries (keeping the daemon's x-tensor-crc32c). Needs only numpy and requests. Prints OK at the end."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import crc32c  # noqa: E402

assert crc32c.hex8(crc32c.crc32c(b"123456789")) == "e3069283"  # the CRC32C check value
assert crc32c.hex8(crc32c._pure(b"123456789")) == "e3069283"

# the implementation in use agrees with the pure table on odd sizes, every buffer type, continued
# from a previous value and on non-contiguous views; ISA-L is the one used wherever libisal is installed
import ctypes.util  # noqa: E402
if ctypes.util.find_library("isal") and os.environ.get("TENPLEX_NO_ISAL") != "1":
    assert crc32c.IMPLEMENTATION.startswith("isa-l"), crc32c.IMPLEMENTATION
rng = np.random.default_rng(7)
for n in (0, 1, 7, 63, 4095, 70001):
    raw = rng.integers(0, 256, n, dtype=np.uint8)
    want = crc32c._pure(raw.tobytes())
    for buf in (raw.tobytes(), bytearray(raw.tobytes()), memoryview(raw), raw):
        assert crc32c.crc32c(buf) == want, (crc32c.IMPLEMENTATION, n, type(buf))
    half = n // 3
    assert crc32c.crc32c(raw[half:], crc32c.crc32c(raw[:half])) == want, n
f32 = rng.standard_normal((33, 17)).astype(np.float32)
assert crc32c.crc32c(memoryview(f32)) == crc32c._pure(f32.tobytes())
strided = f32[:, ::2]
assert crc32c.crc32c(memoryview(strided)) == crc32c._pure(strided.tobytes())  # copied, in C order
try:
    import crc32c as other  # noqa: E402  (the crc32c package, where installed: a second native opinion)
    big = rng.integers(0, 256, (64 << 20) + 5, dtype=np.uint8)
    assert crc32c.crc32c(big) == other.crc32c(memoryview(big)), crc32c.IMPLEMENTATION
except ImportError:
    pass

direct = tenplex.Client(os.environ["TENPLEX_ADDR"], checksums=True)
state = {"w": np.arange(4096, dtype=np.float32).reshape(64, 64), "n": 7}
tenplex.upload(state, "/job/ck/save/0", direct)  # uploads carry their checksum; the daemon verifies it
back = tenplex.download("/job/ck/save/0", direct, as_torch=False)
assert np.array_equal(back["w"], state["w"]) and back["n"] == 7

# an upload whose bytes do not match its checksum is refused and changes nothing
r = direct.session.put(direct.addr + "/api/v1/files/job/ck/f", params={"replace": "true"}, data=b"abc",
                       headers={crc32c.HEADER: "00000000"})
assert r.status_code == 400 and "checksum mismatch" in r.text, (r.status_code, r.text)
assert direct.session.get(direct.addr + "/api/v1/files/job/ck/f").status_code == 404

# a body damaged on the way is detected, with or without asking for the checksum
for ask in (False, True):
    damaged = tenplex.Client(os.environ["TENPLEX_CORRUPT_ADDR_%d" % ask], checksums=ask)
    try:
        tenplex.download("/job/ck/save/0", damaged, as_torch=False)
        raise AssertionError("a damaged tensor was accepted (checksums=%s)" % ask)
    except tenplex.TenplexError as e:
        assert "checksum mismatch" in str(e), e
print("OK")
