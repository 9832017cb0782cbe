"""ADIOS2 rows read through a tenplex dataset mount against ADIOS2's own Python reader reading the same rows.

usage: adios2_rows.py make DIR ROWS ROW_FLOATS
       adios2_rows.py read MOUNT JOB DIR.bp VARIABLE ROUNDS

Runs where the adios2 module is (bin/lib/adios2-env.sh). make writes DIR/bp5.bp (engine BP5, ADIOS2
2.10's default) and DIR/bp4.bp (engine BP4), each with one float32 variable "x" of ROWS rows of
ROW_FLOATS values written as 4 steps of ROWS/4 rows, each step in two blocks (the halves of its rows,
as two writers of a decomposition would), so the mount serves 4 x ROWS/4 rows. read takes rank 0's rows
of JOB (mounted from DIR.bp#VARIABLE, one rank) in the mount's order, batch by batch, and reads them
ROUNDS times each way, alternating which goes first: (a) the mount (tenplex.RankReader, numpy arrays);
(b) ADIOS2, each batch as one selection per step it touches (the rows from its smallest to its
largest id there, then the batch's rows picked out, put back in batch order); (c) ADIOS2, row by row
(a one-row selection of its step). Every row read through the mount is checked against ADIOS2's once.
Prints JSON with the median seconds and rows/s of each.
"""
import sys

import adios2
import numpy as np

from array_rows import compare  # noqa: E402 (bench/python, beside this file)

STEPS = 4


def make(out, rows, width):
    if rows % (2 * STEPS):
        sys.exit("adios2_rows.py: rows must be a multiple of %d" % (2 * STEPS))
    n = rows // STEPS
    rng = np.random.default_rng(3)
    data = [rng.standard_normal((n, width), dtype=np.float32) for _ in range(STEPS)]
    for engine in ("BP5", "BP4"):
        a = adios2.Adios()
        io = a.declare_io("rows-" + engine)
        io.set_engine(engine)
        with adios2.Stream(io, "%s/%s.bp" % (out, engine.lower()), "w") as s:
            for step, _ in enumerate(s.steps(STEPS)):
                half = n // 2
                s.write("x", data[step][:half], [n, width], [0, 0], [half, width])
                s.write("x", data[step][half:], [n, width], [half, 0], [n - half, width])


def read(mount, job, path, name, rounds):
    f = adios2.FileReader(path)
    var = f.inquire_variable(name)
    n, width = (int(d) for d in var.shape())
    steps = int(var.steps())

    def row(i):
        return f.read(name, [i % n, 0], [1, width], step_selection=[i // n, 1]).reshape(width)

    def rows(sorted_ids):
        out = []
        for step in range(steps):
            here = sorted_ids[(sorted_ids >= step * n) & (sorted_ids < (step + 1) * n)] - step * n
            if len(here):
                lo, hi = int(here[0]), int(here[-1])
                block = f.read(name, [lo, 0], [hi - lo + 1, width], step_selection=[step, 1]).reshape(hi - lo + 1, width)
                out.append(block[here - lo])
        return np.concatenate(out)

    compare(mount, job, rounds, "adios2", np.dtype("<f4"), (width,), rows, row,
            lambda i: row(i).tobytes(), "variable", path.rsplit("/", 1)[-1] + "#" + name)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        read(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
