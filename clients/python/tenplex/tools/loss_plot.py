"""Loss plots of a training job's log: ``python3 -m tenplex.plot LOG.jsonl [--compare STATIC.jsonl] [-o PNG]``.

The log is the JSON-lines file examples/elastic_gpt.py writes (``{"step", "loss", "config"}`` per step,
``{"event": "start", "step", "config"}`` per launch). The plot shows the loss per step with every
reconfiguration marked by its new (T,P,D); given a static run's log, it draws that run too and adds a
panel with the difference (elastic minus static) per step, since identical curves hide each other.
Needs matplotlib (Debian: python3-matplotlib); importing this module does not.
"""

import argparse
import json


def read_log(path):
    """The steps (dicts with step and loss) and launches of a log; a launch at step s supersedes the
    steps after s logged before it (work lost with a worker, redone from the recovered generation)."""
    steps, starts = [], []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("event") == "start":
                steps = [x for x in steps if x["step"] <= r["step"]]
                starts.append(r)
            elif "loss" in r:
                steps.append(r)
    return steps, starts


def loss_plot(log, png, compare=None, title=None):
    """Writes the loss plot of ``log`` (and of ``compare``, a static run, with a difference panel) to
    ``png``; returns the number of panels drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, starts = read_log(log)
    if not steps:
        raise ValueError("%s has no step with a loss" % log)
    static = read_log(compare)[0] if compare else None
    panels = 2 if static else 1
    fig, axes = plt.subplots(panels, 1, figsize=(8, 4.5 if panels == 1 else 6.5), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1.3][:panels]})
    ax = axes[0][0]
    if static:
        ax.plot([x["step"] for x in static], [x["loss"] for x in static], color="0.6", lw=3, label="static run")
    ax.plot([x["step"] for x in steps], [x["loss"] for x in steps], color="C0", lw=1.2, marker=".",
            label="elastic run (tenplex)")
    top = max(x["loss"] for x in steps + (static or [])) * 1.06
    ax.set_ylim(top=top * 1.01)
    for s in starts:
        for a in axes[:, 0]:
            if s["step"] > 0:
                a.axvline(s["step"], color="C3", ls="--", lw=1)
        ax.text(s["step"] + 0.5, top, "(T,P,D)=(%d,%d,%d)" % tuple(s["config"]), color="C3", fontsize=8, va="top")
    ax.set_ylabel("training loss")
    moves = [s["step"] for s in starts if s["step"] > 0]
    ax.set_title(title or ("loss per step, reconfigured at steps %s" % moves if moves else "loss per step"))
    ax.legend(loc="center right")
    if static:
        by_step = {x["step"]: x["loss"] for x in static}
        common = [x for x in steps if x["step"] in by_step]
        d = axes[1][0]
        d.plot([x["step"] for x in common], [x["loss"] - by_step[x["step"]] for x in common], color="C2", marker=".",
               lw=1)
        d.axhline(0, color="0.4", lw=0.8)
        d.set_ylabel("elastic - static")
        d.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    axes[-1][0].set_xlabel("step")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return panels


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m tenplex.plot", description=__doc__.split("\n")[0])
    p.add_argument("log", help="the job's JSON-lines log (e.g. out/gpt.jsonl)")
    p.add_argument("--compare", metavar="STATIC.jsonl", help="a static run's log: drawn too, with a difference panel")
    p.add_argument("-o", "--output", help="the PNG to write (default: the log's name with -loss.png)")
    a = p.parse_args(argv)
    out = a.output or (a.log[:-6] if a.log.endswith(".jsonl") else a.log) + "-loss.png"
    loss_plot(a.log, out, a.compare)
    print("wrote %s" % out)


if __name__ == "__main__":
    main()
