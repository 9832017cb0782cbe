"""A state's tree to and from any store path: :func:`upload`, :func:`download` and single files,
over the daemon's files, tensors and dirs routes, with the layout of :mod:`tenplex.wire.tree_codec`.
Tensors are sent from their own memory and read into preallocated arrays (no extra copy of the
bytes in Python); uploads batch small leaves and run in parallel (:mod:`tenplex.wire.batched_upload`)."""

from __future__ import annotations

import logging
import os
from typing import Any, Optional, Union

import numpy as np

from . import batched_upload, compact_batch, tree_codec, routes, torch_values
from ..errors import NoCheckpoint, TenplexError
from .http_client import ERROR_CODE_HEADER, Client, client_for

log = logging.getLogger("tenplex")
_OCTETS = {"Content-Type": "application/octet-stream"}
# Connections a download reads large tensors over: up to 4, no more than the host has cores (each reads
# and verifies on its own; on 2 cores 4 readers ran at 0.74x one read's rate, 2 at 0.91x)
READ_WORKERS = max(2, min(batched_upload.WORKERS, os.cpu_count() or 2))


def _put_tensor(c, path, tensor, replace):
    """One tensor, from its own memory (host memory for a GPU tensor) in one request."""
    a, dtype, shape = tree_codec.as_array(tensor)
    body = tree_codec.byte_view(a)
    c.request("PUT", routes.tensors_route(path), ok=(200, 201),
              params={"dtype": dtype, "dims": tree_codec.dims(shape), "replace": replace},
              data=batched_upload.Pieces([body]) if len(body) else b"", headers=dict(c.upload_headers(body), **_OCTETS))
    return a.nbytes


def _put_file(c, path, payload, replace):
    c.request("PUT", routes.files_route(path), ok=(200, 201), params={"replace": replace}, data=payload,
              headers=dict(c.upload_headers(payload), **_OCTETS))
    return len(payload)


def upload(state: Any, prefix: str, client: Optional[Client] = None, replace: bool = True,
           allow_pickle: bool = False) -> int:
    """Writes a state's tree below the store path ``prefix`` (small leaves batched, large tensors
    over parallel connections, bodies sent from the tensors' own memory). Returns the number of
    bytes sent. ``allow_pickle`` as for :func:`tenplex.save`."""
    return upload_entries(tree_codec.flatten(state, allow_pickle), prefix, client, replace)


def upload_entries(entries, prefix, client=None, replace=True, workers=batched_upload.WORKERS):
    """Writes entries that :func:`tree_codec.flatten` made below the store path ``prefix``: leaves under
    :data:`batched_upload.SMALL` bytes go in compact batches (:mod:`tenplex.wire.compact_batch`; tar archives
    where a name cannot be written in one) of up to :data:`batched_upload.BATCH_BYTES` (one request
    each, stored all or nothing), larger ones one request each; up to ``workers`` requests run at once,
    each thread on its own clone of the client. With more than one request, an archive of empty
    placeholders goes first (:func:`batched_upload.skeleton`): it keeps the state's order and refuses, before
    anything is written, a state that would overwrite something without ``replace``. Writes
    everything or raises the first error (a :class:`TenplexError`); returns the number of payload
    bytes sent."""
    c = client_for(client)
    base = prefix.rstrip("/") + "/"
    leaves = batched_upload.prepare(entries)
    archives, singles = batched_upload.split(leaves)
    if len(archives) + len(singles) > 1:
        batched_upload.post(c, base, batched_upload.skeleton(leaves), replace)  # names in order, existence checked
        replace = True  # the content replaces the placeholders
    rep = "true" if replace else "false"
    jobs = [lambda cl, leaves=leaves: _post_small(cl, base, leaves, replace) for leaves in archives]
    for rel, kind, payload, _ in singles:
        put = _put_tensor if kind == "tensor" else _put_file
        jobs.append(lambda cl, put=put, path=base + rel, payload=payload: put(cl, path, payload, rep))
    return batched_upload.run_parallel(c, jobs, workers)


def _post_small(c, base, leaves, replace):
    """Small leaves in one request: a compact batch (:mod:`tenplex.wire.compact_batch`), or a tar
    archive when a name cannot be written in a batch's index or the daemon predates batches."""
    if c.addr not in _TAR_ONLY:
        try:
            body = compact_batch.Batch(leaves)
        except compact_batch.Unbatchable:
            body = None
        if body is not None:
            try:
                return compact_batch.post(c, base, body, replace)
            except TenplexError as e:
                if not compact_batch.unknown_to(e):
                    raise
                _TAR_ONLY.add(c.addr)
                log.info("the daemon at %s takes no compact batches (%s): small leaves go in tar archives",
                         c.addr, e.reason)
    return batched_upload.post_archive(c, base, leaves, replace)


# daemons that answered a batch as a daemon without batches does: their uploads go as tar from then on
_TAR_ONLY = set()


def put_file(path: str, data: Union[bytes, str], client: Optional[Client] = None) -> None:
    """Writes (or replaces) one file of the store, e.g. ``/job/<job>/model.json``."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    c = client_for(client)
    c.request("PUT", routes.files_route(path), ok=(200, 201), params={"replace": "true"}, data=data,
              headers=c.upload_headers(data))


def read_file(c, path):
    """One file's bytes, verified against the checksum the daemon sent."""
    r = c.request("GET", routes.files_route(path), headers=c.read_headers())
    c.verify(path, r, r.content)
    return r.content


def body_into(r, view, path):
    """Reads a streamed response's whole body into ``view``. Straight from the HTTP response into the
    buffer where the body is not encoded (urllib3's own ``readinto`` reads each call's bytes into a
    new bytes object first: a second copy into new memory); once it is all read, the connection goes
    back to the pool rather than being closed."""
    fp = getattr(r.raw, "_fp", None)
    direct = fp is not None and hasattr(fp, "readinto") and r.headers.get("Content-Encoding", "identity") == "identity"
    reader = fp.readinto if direct else r.raw.readinto
    got = 0
    while got < len(view):
        n = reader(view[got:])
        if not n:
            raise TenplexError("%s: the daemon sent %d of %d bytes" % (path, got, len(view)))
        got += n
    if direct:
        r._content_consumed = True  # read to its end: close() releases the connection instead of closing it


def read_tensor(c, path, short, shape, as_torch):
    """One tensor, streamed into a preallocated array (a torch tensor when ``as_torch``)."""
    a = np.empty(shape, dtype=tree_codec.numpy_dtype(short))
    r = c.request("GET", routes.tensors_route(path), stream=True, headers=c.read_headers())
    try:
        view = tree_codec.byte_view(a)
        body_into(r, view, path)
    finally:
        r.close()
    c.verify(path, r, view)
    return torch_values.from_numpy(a, short) if as_torch else a


def _nbytes(e):
    n = np.dtype(tree_codec.numpy_dtype(e["dtype"])).itemsize
    for d in e["shape"]:
        n *= int(d)
    return n


def read_tensors(c, entries, read_torch, workers=None):
    """The tensors of a listing's ``entries`` by path, those of at least :data:`batched_upload.SMALL`
    bytes read over up to ``workers`` connections at once (each body's checksum verified on its own
    thread, while the others read), the small ones on this thread; the first error is raised."""
    workers = READ_WORKERS if workers is None else workers
    tensors = [e for e in entries if e["type"] == "tensor"]
    large = [e for e in tensors if _nbytes(e) >= batched_upload.SMALL]
    out = {}

    def job(e):
        def read(cl):
            out[e["path"]] = read_tensor(cl, e["path"], e["dtype"], tuple(e["shape"]), read_torch)
            return 0
        return read

    batched_upload.run_parallel(c, [job(e) for e in large], workers)
    for e in tensors:
        if e["path"] not in out:
            out[e["path"]] = read_tensor(c, e["path"], e["dtype"], tuple(e["shape"]), read_torch)
    return out


def download(prefix: str, client: Optional[Client] = None, as_torch: Optional[bool] = None,
             allow_pickle: bool = False) -> Any:
    """Reads the tree below the store path ``prefix`` back into the state that was saved, with the
    types recorded beside it (``as_torch`` and ``allow_pickle`` as for :func:`tenplex.load`); large
    tensors are read over parallel connections (:func:`read_tensors`)."""
    c = client_for(client)
    read_torch = reads_torch(as_torch)
    entries = listing(c, prefix)
    read = read_tensors(c, entries, read_torch)
    return tree_codec.unflatten(entries, prefix, lambda path: read_file(c, path), lambda e: read[e["path"]],
                                as_torch, allow_pickle)


def reads_torch(as_torch):
    """Whether tensors are read as torch tensors: unless ``as_torch`` is ``False`` or torch is not
    installed (``ImportError`` for ``as_torch=True`` without torch)."""
    if as_torch and not torch_values.available():
        raise ImportError("as_torch=True needs torch")
    return torch_values.available() if as_torch is None else bool(as_torch)


def listing(c, prefix):
    """The recursive listing of the tree below ``prefix`` (:class:`NoCheckpoint` when there is none)."""
    r = c.request("GET", routes.dirs_route(prefix), ok=(200, 404), params={"recursive": "true"})
    if r.status_code == 404:
        reason = r.text.strip()
        raise NoCheckpoint("nothing saved at %s: %s" % (prefix, reason), 404, reason, r.headers.get(ERROR_CODE_HEADER))
    return r.json()["entries"]
