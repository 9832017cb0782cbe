"""Writes HDF5 files whose filtered chunks claim or inflate to far more than their dataset's chunks hold.

usage: make_filter_bombs.py OUTDIR

OUTDIR/deflate.h5 (about 5 MB): datasets of uint8 rows in chunks of 1024 x 1024 (1 MiB), deflated;
  /first has its first chunk, /later its second, replaced by a deflate stream of 1 GiB of zeros (about
  1 MB compressed), written in place of the chunk h5py wrote.
OUTDIR/lz4.h5 (about 9 KiB): /bomb, a 16 x 16 uint8 dataset whose filter pipeline names LZ4 (id 32004)
  and whose one chunk's header claims 1 GiB; /sound, the same with a well-formed LZ4 chunk of 4 blocks
  (three compressed, the last raw) whose rows are in OUTDIR/sound.bin.
OUTDIR/later.bin: the rows of /later as h5py wrote them (its second chunk aside).
OUTDIR/stored.h5 (about 4 MB): /claims, uint8 rows in deflated chunks of 1 MiB whose first chunk's record
  in the chunk index claims it is stored in all the bytes from its start to the end of the file.
h5py here has no LZ4 plugin: the LZ4 datasets are written deflated, then the filter id in their pipeline
message is changed to 32004 and their chunk replaced.
"""
import struct
import sys
import zlib

import h5py
import lz4.block
import numpy as np

GIB = 1 << 30


def deflate_zeros(n):
    c = zlib.compressobj(9)
    out = [c.compress(bytes(64 << 20)) for _ in range(n // (64 << 20))]
    out.append(c.flush())
    return b"".join(out)


def patch(path, edits):
    b = bytearray(open(path, "rb").read())
    for at, data in edits:
        b[at:at + len(data)] = data
    open(path, "wb").write(b)


def deflate_file(d):
    rng = np.random.default_rng(11)
    later = rng.integers(0, 256, (3 * 1024, 1024), dtype="u1")
    path = d + "/deflate.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("first", data=rng.integers(0, 256, (2048, 1024), dtype="u1"), chunks=(1024, 1024),
                         compression="gzip")
        f.create_dataset("later", data=later, chunks=(1024, 1024), compression="gzip")
        spots = [f["first"].id.get_chunk_info(0), f["later"].id.get_chunk_info(1)]
    bomb = deflate_zeros(GIB)
    for s in spots:
        assert len(bomb) <= s.size, (len(bomb), s.size)
    patch(path, [(s.byte_offset, bomb) for s in spots])
    open(d + "/later.bin", "wb").write(later.tobytes())


def lz4_chunk(data, block):
    out = [struct.pack(">QI", len(data), block)]
    for i in range(0, len(data), block):
        part = data[i:i + block]
        packed = lz4.block.compress(part, store_size=False)
        if i + block >= len(data) or len(packed) >= len(part):
            packed = part  # stored raw: its length is the block's size
        out.append(struct.pack(">I", len(packed)) + packed)
    return b"".join(out)


def lz4_file(d):
    rng = np.random.default_rng(12)
    path = d + "/lz4.h5"
    sound = (np.arange(256, dtype="u1") % 7 * 9).reshape(16, 16)
    with h5py.File(path, "w") as f:
        for name in ("bomb", "sound"):
            f.create_dataset(name, data=rng.integers(0, 256, (16, 16), dtype="u1"), chunks=(16, 16),
                             compression="gzip")
        spots = {n: f[n].id.get_chunk_info(0) for n in ("bomb", "sound")}
    b = open(path, "rb").read()
    names = [i for i in range(len(b)) if b.startswith(b"deflate\0", i)]
    assert len(names) == 2, names
    bomb = struct.pack(">QI", GIB, GIB) + struct.pack(">I", 8) + bytes(8)
    chunk = lz4_chunk(sound.tobytes(), 64)
    for name, data in (("bomb", bomb), ("sound", chunk)):
        assert len(data) <= spots[name].size, (name, len(data), spots[name].size)
    # version 1 filter descriptions: u16 id, u16 name length, u16 flags, u16 values, then the name
    patch(path, [(at - 8, struct.pack("<H", 32004)) for at in names]
          + [(spots["bomb"].byte_offset, bomb), (spots["sound"].byte_offset, chunk)])
    open(d + "/sound.bin", "wb").write(sound.tobytes())


def stored_file(d):
    rng = np.random.default_rng(13)
    path = d + "/stored.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("claims", data=rng.integers(0, 256, (4096, 1024), dtype="u1"), chunks=(1024, 1024),
                         compression="gzip")
        first = f["claims"].id.get_chunk_info(0)
    b = open(path, "rb").read()
    # a version 1 B-tree key of chunked data: u32 size, u32 filter mask, an offset per dimension and one more
    key = struct.pack("<IIQQQ", first.size, 0, 0, 0, 0)
    assert b.count(key) == 1, b.count(key)
    patch(path, [(b.index(key), struct.pack("<I", len(b) - first.byte_offset))])


if __name__ == "__main__":
    stored_file(sys.argv[1])
    deflate_file(sys.argv[1])
    lz4_file(sys.argv[1])
