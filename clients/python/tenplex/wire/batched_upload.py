"""Uploads of many entries at once. Small leaves travel packed in tar archives to the daemon's
``POST /upload`` (``application/x-tar``: a data entry ``x`` with a sidecar ``x.meta`` becomes the
tensor ``x``; an archive is stored all or nothing), one request per archive instead of one per leaf.
Requests run over parallel connections, each thread with its own clone of the client (a
``requests`` session is not thread-safe). Bodies are lists of pieces sent from the tensors' own
memory: nothing is copied into one bytes object."""

import queue
import tarfile
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

import numpy as np

from . import tree_codec, torch_values

SMALL = 1 << 20
"""Leaves below this many bytes go in archives."""
BATCH_BYTES = 16 << 20
"""Most payload bytes in one archive."""
BATCH_ENTRIES = 2048
"""Most leaves in one archive."""
BATCH_NAME_PARTS = 1 << 16
"""Most path components of the leaves' names in one archive (the daemon parses every one of a batch's
names before it allocates, within a heap budget: 2048 leaves 32 levels deep fit)."""
WORKERS = 4
"""Requests in flight at once."""

_BLOCK = 512
DIRECT = 64 << 10
JOINED = 1 << 20
_ZEROS = bytes(2 * _BLOCK)
_TAR = {"Content-Type": "application/x-tar"}


class Pieces:
    """A request body made of bytes-like pieces sent one after the other: ``requests`` sends it with a
    Content-Length, unchunked, and ``http.client`` hands every piece to one ``sendall``. Pieces of
    64 KiB and more (tensors) go straight from their own memory, neither copied nor cut into small
    writes; runs of smaller ones (tar headers, small tensors) are joined into blocks of about 1 MiB,
    since a system call per 512-byte header costs more than the copy."""

    def __init__(self, pieces):
        self.pieces = []
        run, size = [], 0
        for p in pieces:
            n = len(p)
            if n >= DIRECT:
                self._join(run)
                run, size = [], 0
                self.pieces.append(p)
            elif n:
                run.append(p)
                size += n
                if size >= JOINED:
                    self._join(run)
                    run, size = [], 0
        self._join(run)
        self.length = sum(len(p) for p in self.pieces)

    def _join(self, run):
        if run:
            self.pieces.append(run[0] if len(run) == 1 else b"".join(run))

    def __len__(self):
        return self.length

    def __iter__(self):
        return iter(self.pieces)


def prepare(entries):
    """``(rel, kind, payload, nbytes)`` for each entry of :func:`tree_codec.flatten`. Tensors stay as they
    are: each is turned into host memory (:func:`tree_codec.as_array`) only when its request is built,
    so a state on a GPU is not copied to the host all at once."""
    return [(rel, kind, payload, _nbytes(payload) if kind == "tensor" else len(payload))
            for rel, kind, payload in entries]


def _nbytes(t):
    if type(t) is np.ndarray:
        return t.nbytes
    if torch_values.is_tensor(t):
        return t.numel() * t.element_size()
    return np.asarray(t).nbytes


def split(leaves):
    """(archives, singles): lists of small leaves to archive together, and the leaves sent alone
    (large ones, and a ``.meta`` file that would collide with the sidecar of a tensor beside it)."""
    tensors = {rel for rel, kind, _, _ in leaves if kind == "tensor"}
    archives, singles, current, size, parts = [], [], [], 0, 0
    for leaf in leaves:
        rel, kind, _, n = leaf
        if n >= SMALL or (kind == "file" and rel.endswith(".meta") and rel[:-5] in tensors):
            singles.append(leaf)
            continue
        p = rel.count("/") + 1
        if current and (size + n > BATCH_BYTES or len(current) >= BATCH_ENTRIES or parts + p > BATCH_NAME_PARTS):
            archives.append(current)
            current, size, parts = [], 0, 0
        current.append(leaf)
        size += n
        parts += p
    if current:
        archives.append(current)
    return archives, singles


_MODE_IDS = b"0000644\0" + b"0000000\0" * 2
_MTIME = b"00000000000\0"
_MAGIC = b"ustar\x0000"
_BLANK_SUM = b" " * 8  # the checksum counts its own field as spaces
_TYPE_LINK = b"0" + bytes(100)
_TAIL = bytes(_BLOCK - 265)
_FIXED_SUM = sum(_MODE_IDS + _MTIME + _BLANK_SUM + _TYPE_LINK + _MAGIC)


_HEADERS = {}
_HEADERS_KEPT = 1 << 16


def _header(name, size):
    """A tar header for a regular file, kept for the next archive of the same name and size (a job
    saves the same tree again and again); at most :data:`_HEADERS_KEPT` are kept."""
    key = (name, size)
    h = _HEADERS.get(key)
    if h is None:
        if len(_HEADERS) >= _HEADERS_KEPT:
            _HEADERS.clear()
        h = _HEADERS[key] = _make_header(name, size)
    return h


def _make_header(name, size):
    """A plain ustar block for an ASCII name of up to 100 bytes (built from fixed parts, its checksum
    summed over the two that vary), else tarfile's PAX form."""
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) > 100 or not name.isascii():
        info = tarfile.TarInfo(name)
        info.size = size
        info.mode = 0o644
        return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    size_field = b"%011o\0" % size
    check = b"%06o\0 " % (_FIXED_SUM + sum(raw) + sum(size_field))
    return b"".join((raw, bytes(100 - len(raw)), _MODE_IDS, size_field, _MTIME, check, _TYPE_LINK, _MAGIC, _TAIL))


def _sidecar(dtype, shape):
    return ("%s\n%d\n" % (dtype, len(shape)) + "".join("%d\n" % d for d in shape)).encode("ascii")


BLOCK_CAPACITY = JOINED + DIRECT + 2 * _BLOCK
"""A reused block's size: a block is sent once it holds :data:`JOINED` bytes, and what is appended to it
at once (a plain header, a body under :data:`DIRECT`, its padding) is smaller than the rest."""
_POOL = []
_POOL_KEPT = WORKERS + 1


def take_block():
    """A block buffer whose pages are already touched: one a finished archive gave back, else a new one
    (written once, so that the next archive does not fault in new pages while it is sent: on a
    2-core host the faults of 8 MB of new memory cost about 4x copying it)."""
    try:
        return _POOL.pop()
    except IndexError:
        return bytearray(BLOCK_CAPACITY)


def give_block(buf):
    if len(_POOL) < _POOL_KEPT:
        _POOL.append(buf)


def _blocks(members):
    """The pieces of a tar archive of ``(name, body)`` members, made as they are asked for: small
    members are written one after the other into blocks of about 1 MiB (a header, a small body and its
    padding cost one append each, not a piece of their own), bodies of 64 KiB and more stay pieces
    sent from their own memory; the end records close the last block. Every block is a new
    ``bytearray`` (see :func:`_reused_blocks` for the form that sends them)."""
    block = bytearray()
    for name, body in members:
        n = len(body)
        block += _header(name, n)
        if n >= DIRECT:
            yield block
            yield body
            block = bytearray()
        else:
            block += body
        pad = -n % _BLOCK
        if pad:
            block += _ZEROS[:pad]
        if len(block) >= JOINED:
            yield block
            block = bytearray()
    block += _ZEROS
    yield block


def _reused_blocks(members):
    """The pieces of :func:`_blocks`, the same bytes, written into one reused buffer: each block is a
    view of it that is valid only until the next piece is asked for (a sender that writes each piece
    before asking for the next, as ``http.client`` does). The buffer goes back to the pool when the
    archive ends or is given up."""
    buf = take_block()
    view = memoryview(buf)
    pos = 0
    try:
        for name, body in members:
            n = len(body)
            head = _header(name, n)
            pad = -n % _BLOCK
            small = n < DIRECT
            if pos + len(head) + (n + pad if small else 0) > BLOCK_CAPACITY:
                if pos:
                    yield view[:pos]
                    pos = 0
                if len(head) + n + pad > BLOCK_CAPACITY:  # a PAX header longer than a block: alone
                    yield head
                    head = b""
            h = len(head)
            view[pos:pos + h] = head
            pos += h
            if not small:
                yield view[:pos]
                yield body
                pos = 0
            else:
                view[pos:pos + n] = body
                pos += n
            if pad:
                view[pos:pos + pad] = _ZEROS[:pad]
                pos += pad
            if pos >= JOINED:
                yield view[:pos]
                pos = 0
        view[pos:pos + len(_ZEROS)] = _ZEROS
        yield view[:pos + len(_ZEROS)]
    finally:
        give_block(buf)


class Archive:
    """A tar archive's body whose pieces are built while it is sent (:func:`_reused_blocks` on each
    iteration: each piece is valid until the next is asked for), so the daemon reads the first blocks
    while the next are made, from memory an earlier archive touched. Its length is known before the
    first piece: ``requests`` sends it with a Content-Length, unchunked. :meth:`pieces` makes them all
    at once, each its own."""

    def __init__(self, members):
        self.members = members
        self.length = sum(_header_size(name) + len(body) + (-len(body) % _BLOCK) for name, body in members) + len(_ZEROS)

    def __len__(self):
        return self.length

    def pieces(self):
        """Every piece at once, none reused (to checksum the body before it is sent)."""
        return list(_blocks(self.members))

    def __iter__(self):
        return counted(_reused_blocks(self.members), self.length, "archive")


def counted(pieces, length, what):
    """``pieces`` as they come, then a check that they came to ``length`` bytes: the Content-Length went
    ahead, and a body of another length would cut the next request on the connection."""
    sent = 0
    for piece in pieces:
        sent += len(piece)
        yield piece
    if sent != length:
        raise AssertionError("%s of %d bytes announced as %d" % (what, sent, length))


def _header_size(name):
    raw = name.encode("utf-8", "surrogateescape")
    return _BLOCK if len(raw) <= 100 and name.isascii() else len(_header(name, 0))


def members(leaves):
    """``(name, body)`` archive members of ``leaves`` (tensors as data + ``.meta`` sidecar)."""
    out = []
    for rel, kind, payload, _ in leaves:
        if kind == "tensor":
            a, dtype, shape = tree_codec.as_array(payload)
            out.append((rel, tree_codec.byte_view(a)))
            out.append((rel + ".meta", _sidecar(dtype, shape)))
        else:
            out.append((rel, memoryview(payload)))
    return out


def archive(leaves):
    """The pieces of a tar archive of ``leaves`` (tensors as data + ``.meta`` sidecar)."""
    return list(_blocks(members(leaves)))


def skeleton(leaves):
    """An archive of an empty placeholder file for each leaf, in order. Posted before the content, it
    creates every name in the state's order (a listing comes back in creation order, and a
    replacement keeps its place, so dict keys load in the order they were saved even though the
    content then arrives in any order) and refuses, all or nothing, what exists without replace."""
    return list(_blocks([(rel, b"") for rel, _, _, _ in leaves]))


def post(c, prefix, pieces, replace):
    """Stores the archive ``pieces`` (a list, or an :class:`Archive`) below ``prefix`` in one request,
    all or nothing. With checksums on, the pieces are made first (their CRC32C goes in a header)."""
    if isinstance(pieces, Archive) and c.checksums:
        pieces = pieces.pieces()
    headers = dict(c.upload_headers(pieces), **_TAR)
    if replace:
        headers["x-replace"] = "true"
    body = pieces if isinstance(pieces, Archive) else Pieces(pieces)
    c.request("POST", "/upload", params={"prefix": prefix}, data=body, headers=headers)


def post_archive(c, prefix, leaves, replace):
    """Stores ``leaves`` below ``prefix`` in one request, all or nothing; returns their payload bytes."""
    post(c, prefix, Archive(members(leaves)), replace)
    return sum(n for _, _, _, n in leaves)


def run_parallel(c, jobs, workers=WORKERS):
    """Runs ``jobs`` (functions of a client returning bytes sent) on up to ``workers`` threads, each
    with its own clone of ``c``; returns the sum of their results. The first error stops what has not
    started and is raised once the running jobs are done."""
    if len(jobs) <= 1 or workers <= 1:
        return sum(job(c) for job in jobs)
    clients = queue.SimpleQueue()
    made = []

    def run(job):
        try:
            cl = clients.get_nowait()
        except queue.Empty:
            cl = c.clone()
            made.append(cl)
        try:
            return job(cl)
        finally:
            clients.put(cl)

    pool = ThreadPoolExecutor(max_workers=min(workers, len(jobs)), thread_name_prefix="tenplex-upload")
    try:
        futures = [pool.submit(run, job) for job in jobs]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for f in done:
            if f.exception() is not None:
                pool.shutdown(wait=True, cancel_futures=True)
                raise f.exception()
        return sum(f.result() for f in futures)
    finally:
        pool.shutdown(wait=True)
        for cl in made:
            cl.close()
