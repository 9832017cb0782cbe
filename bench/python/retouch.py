"""How fast this machine gives a process memory: touching N MiB that no process used lately, against
touching it again at once after freeing it, and after the machine idled a while. On a virtual machine
whose balloon device reports free pages to the host (virtio-balloon free page reporting), memory a
process frees goes back to the host about two seconds later, and touching it again costs what new
memory costs. Prints GB/s per case (medians over the rounds) and the ratio of each to an immediate
re-touch. No daemon needed.

    /usr/bin/python3 bench/python/retouch.py [MiB=1024] [rounds=3]
"""
import glob
import sys
import time

import numpy as np


def touch(n):
    t = time.perf_counter()
    a = np.ones(n // 8)  # one mapping of its own (far above malloc's mmap threshold)
    dt = time.perf_counter() - t
    del a
    return n / 1e9 / dt


def free_page_reporting():
    """Whether a virtio-balloon device here negotiated free page reporting (feature bit 5), or None."""
    for f in glob.glob("/sys/bus/virtio/drivers/virtio_balloon/virtio*/features"):
        bits = open(f).read().strip()
        return len(bits) > 5 and bits[5] == "1"
    return None


def main(mib=1024, rounds=3):
    n = mib << 20
    idles = (0, 1, 2, 5, 10, 30)
    rates = {i: [] for i in idles}
    for r in range(rounds):
        for idle in idles:
            touch(n)  # touched and freed: the memory the next touch can reuse
            time.sleep(idle)
            rates[idle].append(touch(n))
        print("round %d: %s" % (r + 1, ", ".join("%d s idle %.2f GB/s" % (i, rates[i][-1]) for i in idles)),
              flush=True)
    med = {i: sorted(v)[len(v) // 2] for i, v in rates.items()}
    print("free page reporting: %s" % {True: "on", False: "off", None: "no virtio-balloon device"}[free_page_reporting()])
    for i in idles:
        print("re-touch of %d MiB after %2d s idle: %6.2f GB/s, %.2fx an immediate re-touch" % (mib, i, med[i], med[i] / med[0]))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
