"""What page faults cost a save, a load and a training step on this machine, side by side in one run
(docs/BENCHMARKS.md, "Page costs"): each case with and without what the client and the launcher now do.

1. a save's copy into a segment mapped for the first time: plain ``mmap`` against ``MAP_POPULATE``;
2. a load's copy out of a segment mapped for the first time into tensors already touched: the same;
3. a load into new tensors (``torch.empty``): neither, against ``MAP_POPULATE`` and ``MADV_HUGEPAGE``
   on the new tensors (``tenplex.wire.shared_memory.huge_pages``);
4. a training step (an 8-layer float64 MLP, 2048 wide, AdamW), then a change to a state of other shapes
   and the same size (the old one freed, the new one loaded, as in a live change), and its first step: a
   fresh interpreter with no tunables, with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (what ``tenplex run``
   gives its ranks, ``tenplex.rank_env.MEMORY_TUNABLES``), and with freed memory kept in malloc's heap as
   well (``mmap_max=0``, ``trim_threshold`` 1 TiB: faster here, slower in the large model's
   reconfigurations, so not used; docs/DECISIONS.md).

Usage: /usr/bin/python3 bench/python/page_costs.py [MiB] [rounds]  (default 400 MiB, 5 rounds; medians)"""

import mmap
import os
import statistics
import subprocess
import sys
import time
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
from tenplex.wire import shared_memory  # noqa: E402

warnings.simplefilter("ignore")  # torch.frombuffer on a read-only mapping
POPULATE = shared_memory.MAP_POPULATE
STEP = """
import time, torch
torch.manual_seed(0)
src = torch.randn(8 * 2048 * 2048 + 8 * 2048, dtype=torch.float64)  # what a change loads (a segment's bytes)
x = torch.randn(64, 2048, dtype=torch.float64)


def steps(m, opt, k):
    ts = []
    for i in range(k):
        t = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        m(x).sum().backward()
        opt.step()
        ts.append(time.perf_counter() - t)
    return ts[0], sorted(ts[1:])[len(ts[1:]) // 2]


m = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048, dtype=torch.float64) for _ in range(8)])
opt = torch.optim.AdamW(m.parameters())
first, steady = steps(m, opt, 4)
del m, opt  # the change: the old state freed, one of other shapes loaded
t = time.perf_counter()
layers = []
for i in range(2):
    layers += [torch.nn.Linear(2048, 4096, dtype=torch.float64, device="meta"),
               torch.nn.Linear(4096, 2048, dtype=torch.float64, device="meta")]
m = torch.nn.Sequential(*layers).to_empty(device="cpu")
off = 0
with torch.no_grad():
    for p in m.parameters():
        p.copy_(src[off:off + p.numel()].view(p.shape) if off + p.numel() <= src.numel() else p.zero_())
        off += p.numel()
load = time.perf_counter() - t
opt = torch.optim.AdamW(m.parameters())
after, steady_after = steps(m, opt, 4)
print(first, steady, load, after, steady_after)
"""
VARIANTS = (("no tunables", ""), ("glibc.malloc.hugetlb=1", "glibc.malloc.hugetlb=1"),
            ("and freed memory kept", "glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:"
                                      "glibc.malloc.trim_threshold=1099511627776"))


def copy_through(fd, n, flags, write, tensors):
    """Maps ``n`` bytes of ``fd`` anew and copies ``tensors`` into it (``write``) or out of it; seconds."""
    t = time.perf_counter()
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if write else 0)
    m = mmap.mmap(fd, n, mmap.MAP_SHARED | flags, prot)
    b = torch.frombuffer(m, dtype=torch.uint8)
    off = 0
    for s in tensors:
        nb = s.numel() * s.element_size()
        v = b[off:off + nb].view(s.dtype)
        (v.copy_(s) if write else s.copy_(v))
        off += nb
    took = time.perf_counter() - t
    del b, v
    m.close()
    return took


def load_new(fd, n, count, flags, advise):
    """Maps anew and loads ``count`` float64 tensors into new ones (``torch.empty``); seconds."""
    t = time.perf_counter()
    m = mmap.mmap(fd, n, mmap.MAP_SHARED | flags, mmap.PROT_READ)
    b = torch.frombuffer(m, dtype=torch.uint8)
    per = n // count
    out = []
    for i in range(count):
        d = torch.empty(per // 8, dtype=torch.float64)
        if advise:
            shared_memory.huge_pages(d)
        d.copy_(b[i * per:(i + 1) * per].view(torch.float64))
        out.append(d)
    took = time.perf_counter() - t
    del b, out
    m.close()
    return took


def step_times(tunables):
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    if tunables:
        env["GLIBC_TUNABLES"] = tunables
    out = subprocess.run([sys.executable, "-c", STEP], env=env, capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split()]


def main(mib=400, rounds=5):
    n = mib << 20
    count = 200
    src = [torch.randn(n // count // 8, dtype=torch.float64) for _ in range(count)]
    dst = [torch.zeros_like(s) for s in src]
    fd = os.memfd_create("page-costs")
    os.posix_fallocate(fd, 0, n)
    copy_through(fd, n, 0, True, src)  # the segment's pages exist, as a daemon's kept segment's do
    cases = {}
    for _ in range(rounds):
        for name, f in (("save, plain mmap", lambda: copy_through(fd, n, 0, True, src)),
                        ("save, MAP_POPULATE", lambda: copy_through(fd, n, POPULATE, True, src)),
                        ("load into touched tensors, plain mmap", lambda: copy_through(fd, n, 0, False, dst)),
                        ("load into touched tensors, MAP_POPULATE", lambda: copy_through(fd, n, POPULATE, False, dst)),
                        ("load into new tensors, plain", lambda: load_new(fd, n, count, 0, False)),
                        ("load into new tensors, MAP_POPULATE + MADV_HUGEPAGE", lambda: load_new(fd, n, count, POPULATE,
                                                                                               True))):
            cases.setdefault(name, []).append(f())
    print("%d MiB in %d tensors, %d rounds (medians, seconds)" % (mib, count, rounds))
    names = list(cases)
    for i in range(0, len(names), 2):
        a, b = statistics.median(cases[names[i]]), statistics.median(cases[names[i + 1]])
        print("  %-52s %6.3f" % (names[i], a))
        print("  %-52s %6.3f   (%.2f of the time above)" % (names[i + 1], b, b / a))
    runs = {label: [] for label, _ in VARIANTS}
    for _ in range(max(1, rounds // 2)):  # alternated, so a noisy stretch of the machine hits each alike
        for label, tunables in VARIANTS:
            runs[label].append(step_times(tunables))
    med = {label: [statistics.median(r[i] for r in rs) for i in range(5)] for label, rs in runs.items()}
    print("training steps (first, steady; then a change: load, first step after it, steady after it)")
    for label, m in med.items():
        print("  %-28s first %.3f, steady %.3f | load %.3f, first %.3f, steady %.3f" % ((label,) + tuple(m)))
    base = med["glibc.malloc.hugetlb=1"]
    for label, m in med.items():
        print("  %-28s steady %.2fx, first after the change %.2fx, load %.2fx faster than hugetlb=1 alone; "
              "first step after the change %.2fx its steady step" % (label, base[1] / m[1], base[3] / m[3],
                                                                    base[2] / m[2], m[3] / m[4]))

if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:3]))
