"""Small leaves in the daemon's compact batch form (``POST /upload`` with
``application/x-tenplex-batch``): a first line ``tenplex-batch 1 <entries> <index bytes>``, an index of
one line per leaf (``<bytes>\\t<dtype>\\t<dims>\\t<name>``; ``-`` as dtype and dims for a file), then the
leaves' bytes back to back in index order. Against a tar archive of the same leaves there is no header
and no sidecar per leaf, and the daemon lands all the bytes in one allocation that the leaves share;
stored all or nothing, like an archive. Names that hold a newline or are not valid UTF-8 cannot be
written in the index: such leaves go in a tar archive (:func:`fits`)."""

import numpy as np

from . import batched_upload, tree_codec

CONTENT_TYPE = "application/x-tenplex-batch"
_HEADERS = {"Content-Type": CONTENT_TYPE}


def fits(leaves):
    """Whether every leaf's name can be written in a batch index."""
    for rel, _, _, _ in leaves:
        if "\n" in rel:
            return False
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


class Batch:
    """A batch's body: the head and index first (one piece), then the leaves' bytes, small ones copied
    one after the other into a reused block of about 1 MiB (valid until the next piece is asked for,
    as ``http.client`` sends them), those of 64 KiB and more sent from their own memory. Its length is
    known before the first piece (sent with a Content-Length); :meth:`pieces` makes every piece at
    once, each its own (to checksum the body before it is sent)."""

    def __init__(self, leaves):
        lines, bodies = [], []
        for rel, kind, payload, _ in leaves:
            if kind == "tensor":
                body, dtype, shape = _tensor_bytes(payload)
                lines.append("%d\t%s\t%s\t%s\n" % (len(body), dtype, ",".join(map(str, shape)), rel))
            else:
                body = memoryview(payload).cast("B")
                lines.append("%d\t-\t-\t%s\n" % (len(body), rel))
            bodies.append(body)
        index = "".join(lines).encode("utf-8")
        self.head = b"tenplex-batch 1 %d %d\n" % (len(lines), len(index)) + index
        self.bodies = bodies
        self.length = len(self.head) + sum(len(b) for b in bodies)

    def __len__(self):
        return self.length

    def pieces(self):
        """Every piece at once, none reused."""
        return [self.head] + [b for b in self.bodies if len(b)]

    def __iter__(self):
        yield self.head
        sent = len(self.head)
        for piece in _blocks(self.bodies):
            sent += len(piece)
            yield piece
        if sent != self.length:  # the Content-Length went ahead: a mismatch would cut the next request
            raise AssertionError("batch of %d bytes announced as %d" % (sent, self.length))


def _tensor_bytes(t):
    """``(bytes, dtype short name, shape)`` of a tensor leaf, without a copy where it can: a plain
    C-contiguous numpy array of at least one dimension and one element is viewed directly, anything else goes through
    :func:`tree_codec.as_array`."""
    if type(t) is np.ndarray and t.ndim and t.size and t.flags.c_contiguous:
        return memoryview(t).cast("B"), tree_codec.short_dtype(t.dtype), t.shape
    a, dtype, shape = tree_codec.as_array(t)
    return tree_codec.byte_view(a), dtype, shape


def _blocks(bodies):
    """``bodies`` as pieces: runs of small ones copied into one reused block (each yielded view valid
    until the next piece is asked for), large ones as they are. The block goes back to the pool when the
    batch ends or is given up."""
    buf = batched_upload.take_block()
    view = memoryview(buf)
    pos = 0
    direct, joined, capacity = batched_upload.DIRECT, batched_upload.JOINED, batched_upload.BLOCK_CAPACITY
    try:
        for body in bodies:
            n = len(body)
            if n >= direct:
                if pos:
                    yield view[:pos]
                    pos = 0
                yield body
                continue
            if pos + n > capacity:
                yield view[:pos]
                pos = 0
            view[pos:pos + n] = body
            pos += n
            if pos >= joined:
                yield view[:pos]
                pos = 0
        if pos:
            yield view[:pos]
    finally:
        batched_upload.give_block(buf)


def post(c, prefix, leaves, replace):
    """Stores ``leaves`` below ``prefix`` in one request, all or nothing; returns their payload bytes.
    With checksums on, the pieces are made first (their CRC32C goes in a header)."""
    body = Batch(leaves)
    pieces = body.pieces() if c.checksums else body
    headers = dict(c.upload_headers(pieces), **_HEADERS)
    if replace:
        headers["x-replace"] = "true"
    c.request("POST", "/upload", params={"prefix": prefix},
              data=batched_upload.Pieces(pieces) if c.checksums else body, headers=headers)
    return sum(n for _, _, _, n in leaves)
