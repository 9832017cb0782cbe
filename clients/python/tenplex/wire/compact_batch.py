"""Small leaves in the daemon's compact batch form (``POST /upload`` with
``application/x-tenplex-batch``): a first line ``tenplex-batch 1 <entries> <index bytes>``, an index of
one line per leaf (``<bytes>\\t<dtype>\\t<dims>\\t<name>``; ``-`` as dtype and dims for a file), then the
leaves' bytes back to back in index order. Against a tar archive of the same leaves there is no header
and no sidecar per leaf, and the daemon lands all the bytes in one allocation that the leaves share;
stored all or nothing, like an archive. Names that hold a newline or are not valid UTF-8 cannot be
written in the index (:class:`Batch` raises :class:`Unbatchable`): such leaves go in a tar archive."""

import itertools

import numpy as np

from . import batched_upload, torch_values, tree_codec

CONTENT_TYPE = "application/x-tenplex-batch"
_HEADERS = {"Content-Type": CONTENT_TYPE}


class Unbatchable(ValueError):
    """A leaf's name cannot be written in a batch's index (it holds a newline or is not valid UTF-8)."""


class Batch:
    """A batch's body: the head and index first (one piece), then the leaves' bytes, small ones copied
    one after the other into a reused block of about 1 MiB (valid until the next piece is asked for,
    as ``http.client`` sends them), those of 64 KiB and more sent from their own memory. Its length is
    known before the first piece (sent with a Content-Length); :meth:`pieces` makes every piece at
    once, each its own (to checksum the body before it is sent)."""

    def __init__(self, leaves):
        lines, bodies = [], []
        fields = {}  # the fields before the name, by (dtype, shape): a state repeats a few shapes many times
        run = []  # consecutive joinable torch tensors of one dtype: their bytes go in one body
        plain = torch_values.torch.Tensor if torch_values.available() else None
        for rel, kind, payload, n in leaves:
            if type(payload) is plain and kind == "tensor" and torch_values.joinable(payload):
                if run and run[0].dtype != payload.dtype:
                    bodies.append(_joined(run))
                    run = []
                key = (payload.dtype, payload.shape)
                f = fields.get(key)
                if f is None:
                    f = fields[key] = _fields(n, torch_values.short_dtype(payload.dtype), payload.shape)
                lines.append(f + rel + "\n")
                run.append(payload)
                continue
            if run:
                bodies.append(_joined(run))
                run = []
            if kind != "tensor":
                body = memoryview(payload).cast("B")
                lines.append("%d\t-\t-\t%s\n" % (len(body), rel))
            elif type(payload) is np.ndarray and payload.ndim and payload.size and payload.flags.c_contiguous:
                body = memoryview(payload).cast("B")  # a plain array's own bytes, viewed directly
                key = (payload.dtype, payload.shape)
                f = fields.get(key)
                if f is None:
                    f = fields[key] = _fields(len(body), tree_codec.short_dtype(payload.dtype), payload.shape)
                lines.append(f + rel + "\n")
            else:
                a, dtype, shape = tree_codec.as_array(payload)
                body = tree_codec.byte_view(a)
                lines.append(_fields(len(body), dtype, shape) + rel + "\n")
            bodies.append(body)
        if run:
            bodies.append(_joined(run))
        try:
            index = "".join(lines).encode("utf-8")
        except UnicodeEncodeError:
            raise Unbatchable("a name is not valid UTF-8") from None
        if index.count(b"\n") != len(lines):
            raise Unbatchable("a name holds a newline")
        self.head = b"tenplex-batch 1 %d %d\n" % (len(lines), len(index)) + index
        self.bodies = bodies
        self.payload = sum(len(b) for b in bodies)
        self.length = len(self.head) + self.payload

    def __len__(self):
        return self.length

    def pieces(self):
        """Every piece at once, none reused."""
        return [self.head] + [b for b in self.bodies if len(b)]

    def __iter__(self):
        return batched_upload.counted(itertools.chain((self.head,), _blocks(self.bodies)), self.length, "batch")


def _joined(run):
    """The bytes of a run of torch tensors: joined in one call when there are several, else the one's own."""
    if len(run) == 1:
        a, _ = torch_values.to_numpy(run[0])
        return tree_codec.byte_view(a)
    return torch_values.joined_bytes(run)


def _fields(nbytes, dtype, shape):
    """An index line's fields before the name: size, dtype and dims, each followed by a tab."""
    return "%d\t%s\t%s\t" % (nbytes, dtype, ",".join(map(str, shape)))


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


def post(c, prefix, body, replace):
    """Stores a :class:`Batch` below ``prefix`` in one request, all or nothing; returns its leaves'
    payload bytes. With checksums on, the pieces are made first (their CRC32C goes in a header)."""
    pieces = body.pieces() if c.checksums else body
    headers = dict(c.upload_headers(pieces), **_HEADERS)
    if replace:
        headers["x-replace"] = "true"
    c.request("POST", "/upload", params={"prefix": prefix},
              data=batched_upload.Pieces(pieces) if c.checksums else body, headers=headers)
    return body.payload


def unknown_to(error):
    """Whether ``error`` is a daemon's answer that it does not know batches: one without them reads
    ``POST /upload`` of any other type as one file at ``?path=``, which a batch does not give. Such a
    daemon refuses before it stores anything, so the same leaves can go again as a tar archive."""
    return error.status == 400 and "missing query parameter 'path'" in (error.reason or "")
