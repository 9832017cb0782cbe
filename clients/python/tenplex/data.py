"""Reading a rank's data partition from a tenplex dataset view (FUSE mount, or REST without one).

The daemon shows each data-parallel rank its samples, batch after batch, read-only under
``<mount>/job/<job>/``. This module reads the simple layout (``dataset/rank-<r>/samples`` with
``offsets.npy`` and ``ids.npy``) or the prototype's (``head.txt``, ``rank-RRR/list.txt``,
``batch-sizes.txt`` and ``.tf_record`` shards with ``.idx``/``.meta``), and reproduces the global
sample order the daemon uses (``sample_order``), so a client can check what it read.
Pure Python with numpy; ``RankDataset`` is a ``torch.utils.data.IterableDataset`` when torch is
installed.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

import io
import json
import os

import numpy as np

from .wire import routes as paths  # "layout" is the name of the sample layout here

MAX_READ = 64 << 20  # the daemon's limit for one ranged read of a view file

_MASK = (1 << 64) - 1


def sample_order(n: int, seed: int, epoch: int = 0, shuffle: bool = True) -> List[int]:
    """The global order of ``n`` samples: SplitMix64 seeded with ``seed + epoch`` driving a
    Fisher-Yates shuffle from the back (docs/DATASETS.md). Identity without shuffling."""
    order = list(range(n))
    if not shuffle:
        return order
    state = (seed + epoch) & _MASK
    for i in range(n - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        z ^= z >> 31
        j = z % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def _read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


class RankReader:
    """The samples of one data-parallel rank, as a list of ``bytes`` per local batch.

    ``mount`` is the FUSE mount point, ``job`` the job id, ``rank`` the data-parallel rank.
    ``mount=None`` reads the same view files over REST from the daemon of ``client`` (a
    :class:`tenplex.Client`, default: ``TENPLEX_ADDR``), for hosts without FUSE (simple layout only).
    ``layout`` is ``"simple"`` (default) or ``"prototype"``. ``decode`` (optional) turns each
    sample's bytes into something else, e.g. ``lambda b: np.frombuffer(b, np.float32)``.
    Reads block while the daemon is still loading the samples; they never fail for that reason.
    """

    def __init__(self, mount: Optional[str], job: str, rank: int, layout: str = "simple",
                 decode: Optional[Callable[[bytes], Any]] = None, client: Any = None) -> None:
        self.mount = mount
        self.job = job
        self.rank = rank
        self.layout = layout
        self.decode = decode
        self.files = _MountFiles(mount) if mount is not None else _RestFiles(job, client)
        if mount is None and layout != "simple":
            raise ValueError("the %s layout is read from a FUSE mount only (mount=None reads the simple layout)" % layout)
        self.info = json.loads(self.files.read(paths.dataset_dir(job) + "/mount.json"))
        if not 0 <= rank < self.info["dpSize"]:
            raise ValueError("rank %d outside the data-parallel size %d" % (rank, self.info["dpSize"]))
        self.local_batch = self.info["localBatch"][rank]
        self.batches = self.info["batches"]

    def __len__(self):
        return self.batches

    def _rank_file(self, name):
        return paths.dataset_rank_dir(self.job, self.rank) + "/" + name

    def _simple(self):
        offsets = np.load(io.BytesIO(self.files.read(self._rank_file("offsets.npy"))))
        with self.files.opened(self._rank_file("samples")) as f:
            for b in range(self.batches):
                lo = int(offsets[b * self.local_batch])
                hi = int(offsets[(b + 1) * self.local_batch])
                buf = f.read_range(lo, hi - lo)
                yield [buf[int(offsets[i]) - lo:int(offsets[i + 1]) - lo]
                       for i in range(b * self.local_batch, (b + 1) * self.local_batch)]

    def _prototype(self):
        root = self.mount
        head = _read(paths.under(root, paths.dataset_head_file(self.job)), "r").strip()
        rank_dirs = _read(root + head, "r").split()
        rank_dir = root + rank_dirs[self.rank]
        sizes = []
        for line in _read(os.path.join(rank_dir, "batch-sizes.txt"), "r").splitlines():
            if line.strip():
                size, count = (int(x) for x in line.split())
                sizes.extend([size] * count)
        pending = []
        while sizes and sizes[0] == 0:  # a rank that takes nothing from a global batch
            sizes.pop(0)
            yield []
        for shard in _read(os.path.join(rank_dir, "list.txt"), "r").split():
            lines = _read(root + shard + ".idx", "r").split("\n")
            count = int(lines[1].split()[1])
            ranges = [tuple(int(x) for x in lines[2 + i].split()) for i in range(count)]
            data = _read(root + shard)
            pending.extend(data[b:e] for b, e in ranges)
            while sizes and len(pending) >= sizes[0]:
                n = sizes.pop(0)
                yield pending[:n]
                pending = pending[n:]

    def __iter__(self):
        batches = self._prototype() if self.layout == "prototype" else self._simple()
        for batch in batches:
            yield [self.decode(s) for s in batch] if self.decode else batch

    def ids(self):
        """Global ids of the rank's samples in read order."""
        return [int(x) for x in np.load(io.BytesIO(self.files.read(self._rank_file("ids.npy"))))]


def _read_exact(f, n):
    out = bytearray()
    while len(out) < n:
        chunk = f.read(n - len(out))
        if not chunk:
            raise IOError("unexpected end of file after %d of %d bytes" % (len(out), n))
        out += chunk
    return bytes(out)


class _MountFiles:
    """View files read through the FUSE mount."""

    def __init__(self, mount):
        self.mount = mount

    def read(self, path):
        return _read(paths.under(self.mount, path))

    def opened(self, path):
        return _MountFile(open(paths.under(self.mount, path), "rb", buffering=0))


class _MountFile:
    def __init__(self, f):
        self.f = f

    def read_range(self, offset, n):
        self.f.seek(offset)
        return _read_exact(self.f, n)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


class _RestFiles:
    """View files read over REST (``GET /api/v1/datasets/<job>/files/<path>``, ranged)."""

    def __init__(self, job, client):
        from .wire.http_client import client_for
        self.c = client_for(client)
        self.prefix = paths.job_dir(job) + "/"
        self.route = "/api/v1/datasets/%s/files/" % job

    def read(self, path, offset=None, n=None):
        if not path.startswith(self.prefix):
            raise ValueError("%s is not in the job's dataset view %s" % (path, self.prefix))
        params = {} if offset is None else {"offset": str(offset), "length": str(n)}
        return self.c.request("GET", self.route + path[len(self.prefix):], params=params).content

    def opened(self, path):
        return _RestFile(self, path)


class _RestFile:
    def __init__(self, files, path):
        self.files, self.path = files, path

    def read_range(self, offset, n):
        out = bytearray()
        while len(out) < n:
            got = self.files.read(self.path, offset + len(out), min(MAX_READ, n - len(out)))
            if not got:
                raise IOError("%s ended after %d of %d bytes at offset %d" % (self.path, len(out), n, offset))
            out += got
        return bytes(out)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


try:
    import torch.utils.data as _tud

    class RankDataset(_tud.IterableDataset):
        """A ``torch.utils.data.IterableDataset`` over one rank's batches (each a list of decoded samples)."""

        def __init__(self, mount: Optional[str], job: str, rank: int, layout: str = "simple",
                     decode: Optional[Callable[[bytes], Any]] = None, client: Any = None) -> None:
            super().__init__()
            self.reader = RankReader(mount, job, rank, layout, decode, client)

        def __iter__(self):
            return iter(self.reader)

        def __len__(self):
            return len(self.reader)
except ImportError:  # torch is optional
    RankDataset = None
