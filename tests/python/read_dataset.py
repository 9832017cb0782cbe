"""Reads every rank of a mounted dataset through the FUSE view and prints what each read.

Usage: read_dataset.py <mount> <job> <dp size>. Prints JSON: for each layout, per rank, the list of
batches, each a list of sample ids (every sample's first 8 bytes hold its id, little-endian), and
whether the torch IterableDataset gave the same. Checks the order the client computes against the
daemon's ids.npy.
"""
import json
import struct
import sys

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0] + "/clients/python")
import tenplex  # noqa: E402

mount, job, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


def sid(b):
    return struct.unpack("<q", b[:8])[0]


out = {"simple": [], "prototype": [], "torch": None}
for r in range(n):
    reader = tenplex.RankReader(mount, job, r, decode=sid)
    batches = list(reader)
    assert [i for b in batches for i in b] == reader.ids(), "samples differ from ids.npy"
    out["simple"].append(batches)
    out["prototype"].append(list(tenplex.RankReader(mount, job, r, layout="prototype", decode=sid)))
info = reader.info
order = tenplex.sample_order(info["samples"], info["seed"], info["epoch"], info["shuffle"])
start = info["progress"] % ((info["samples"] // info["globalBatch"]) * info["globalBatch"])
k = -(-info["globalBatch"] // n)
for b in range(info["batches"]):
    g = order[start + b * info["globalBatch"]:start + (b + 1) * info["globalBatch"]]
    for r in range(n):
        assert out["simple"][r][b] == g[min(r * k, len(g)):min((r + 1) * k, len(g))], (r, b)
if tenplex.RankDataset is not None:
    import torch.utils.data
    loader = torch.utils.data.DataLoader(tenplex.RankDataset(mount, job, 0, decode=sid), batch_size=None)
    out["torch"] = [list(b) for b in loader] == out["simple"][0]
print(json.dumps(out))
