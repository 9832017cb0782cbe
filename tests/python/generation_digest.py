"""The bytes of every complete generation of a job, as digests, for the chaos test (LiveChaosIT).

Usage: generation_digest.py ADDR JOB

Prints one JSON line and OK: ``{"current": N, "generations": {STEP: {"levels": [...], "lost": ...,
"ranks": {RANK: SHA256}}}}``. A rank's digest covers every tensor (dtype, shape and raw bytes, so -0.0
and +0.0 or two NaN payloads differ) and every file of its tree
``/job/<job>/generations/<step>/<rank>/``, in path order. Two digests taken before a fault and after it
are equal exactly when the generation came through bit for bit. A generation dropped while it is read
(an older one, when a newer one completes) is listed with ``dropped`` and no digests."""

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import tenplex  # noqa: E402
from tenplex.stop import generations  # noqa: E402
from tenplex.wire import transfer  # noqa: E402


def digests(c, base):
    """{rank: SHA-256 over the rank's tree below ``base``: each entry's path and kind, a tensor's dtype,
    shape and bytes, a file's bytes}, in path order."""
    by_rank = {}
    for e in sorted(transfer.listing(c, base), key=lambda e: e["path"]):
        rank = e["path"][len(base) + 1:].split("/", 1)[0]
        if not rank.isdigit() or e["type"] == "dir":
            continue
        h = by_rank.setdefault(rank, hashlib.sha256())
        h.update(("%s\0%s\0" % (e["path"], e["type"])).encode("utf-8"))
        if e["type"] == "file":
            h.update(c.request("GET", "/api/v1/files" + e["path"]).content)
        else:
            h.update(("%s\0%s\0" % (e.get("dtype"), e.get("shape"))).encode("utf-8"))
            h.update(c.request("GET", "/api/v1/tensors" + e["path"]).content)
    return {r: h.hexdigest() for r, h in by_rank.items()}


def main(addr, job):
    c = tenplex.Client(addr)
    g = generations(job, c)
    out = {"current": g.get("current"), "generations": {}}
    for gen in g.get("generations", ()):
        step = int(gen["step"])
        entry = {"levels": gen.get("levels"), "lost": gen.get("lost"), "ranks": {}}
        if gen.get("complete", True) and not gen.get("lost"):
            try:
                entry["ranks"] = digests(c, "/job/%s/generations/%d" % (job, step))
            except (tenplex.NoCheckpoint, tenplex.TenplexError) as e:  # dropped while read (a newer one completed)
                if getattr(e, "status", None) != 404:
                    raise
                entry["dropped"] = str(e)
        out["generations"][str(step)] = entry
    print(json.dumps(out, sort_keys=True))
    print("OK")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
