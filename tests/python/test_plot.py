"""tenplex.plot draws the loss plot that examples/elastic_gpt.py leaves behind: one panel for a run,
two (the runs and their difference) with a static run to compare; superseded steps (a relaunch from
an older generation) are left out; ``python3 -m tenplex.plot`` writes <log>-loss.png. No daemon is
needed. Prints OK at the end; any failure raises."""

import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "..", "..", "clients", "python")
sys.path.insert(0, CLIENT)

import matplotlib.image as mpimg  # noqa: E402

from tenplex.tools import loss_plot  # noqa: E402


def write(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def loss(step):
    return 4.0 * math.exp(-step / 20.0) + 0.5


with tempfile.TemporaryDirectory() as d:
    static, elastic = os.path.join(d, "static.jsonl"), os.path.join(d, "elastic.jsonl")
    write(static, [{"event": "start", "step": 0, "config": [1, 1, 1]}]
          + [{"step": s, "loss": loss(s), "config": [1, 1, 1]} for s in range(1, 61)])
    recs = []
    for start, end, cfg in [(0, 15, [2, 2, 1]), (15, 33, [1, 1, 4]), (30, 60, [4, 1, 1])]:  # 31..33 redone
        recs.append({"event": "start", "step": start, "config": cfg})
        recs += [{"step": s, "loss": loss(s) * (1 + 1e-12 * s), "config": cfg} for s in range(start + 1, end + 1)]
    write(elastic, recs)

    steps, starts = loss_plot.read_log(elastic)
    assert [x["step"] for x in steps] == list(range(1, 61)), [x["step"] for x in steps]
    assert [s["step"] for s in starts] == [0, 15, 30]

    one = os.path.join(d, "one.png")
    assert loss_plot.loss_plot(elastic, one) == 1
    two = os.path.join(d, "two.png")
    assert loss_plot.loss_plot(elastic, two, compare=static) == 2
    for png, height in [(one, 450), (two, 650)]:
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", png
        img = mpimg.imread(png)
        assert img.shape[:2] == (height, 800), img.shape
        assert img.std() > 0.05, "the plot is blank"
    assert os.path.getsize(two) > os.path.getsize(one)

    out = subprocess.run([sys.executable, "-m", "tenplex.plot", elastic, "--compare", static],
                         cwd=CLIENT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert os.path.getsize(os.path.join(d, "elastic-loss.png")) > 10000, out.stdout

    write(os.path.join(d, "empty.jsonl"), [{"event": "start", "step": 0, "config": [1, 1, 1]}])
    try:
        loss_plot.loss_plot(os.path.join(d, "empty.jsonl"), os.path.join(d, "x.png"))
        raise AssertionError("a log without losses was plotted")
    except ValueError as e:
        assert "no step with a loss" in str(e)

print("OK")
