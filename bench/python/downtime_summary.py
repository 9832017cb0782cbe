"""The figures of bench/reconfigure-downtime: reads each run's downtime status (the daemon's
GET /api/v1/jobs/<job>/downtime, saved as JSON) and prints, per reconfiguration, its downtime split and the
sum of save + move + load (the daemon's move, the ranks' save and load), then the medians over the
reconfigurations and rounds of each mode. The last line is
``downtime: live X s, relaunch Y s, relaunch/live R, live/(save+move+load) Q``; with cold runs (relaunch
with --no-prestart) a line before it compares them with the relaunch runs (pre-started interpreters).
With ``--model FLAGS --schedule FILE`` (the example's model flags and the schedule), each reconfiguration
also gets the bytes its save, move and load touched (bench/python/phase_bytes.py) and each phase's ratio
to the machine's memory-copy floor for them; with a run's training log (``MODE=FILE,LOG``: the example's
``<job>.jsonl``) the new configuration's steady step (median interval between its consecutive steps, the
first two after each start left out) and the first step's ratio to it; and a line per live
reconfiguration with issue 41's targets.
Usage: downtime_summary.py [--model FLAGS --schedule FILE] MODE=FILE[,LOG] [...]
(MODE: live, relaunch or cold; a mode may repeat)"""
import json
import os
import shlex
import statistics
import sys

CONTEXT = {}  # model, schedule and floor when given


def steady_step(log):
    """By configuration (a (T, P, D) tuple), the median seconds between consecutive steps under it (the
    first two after each start, which pay the start's costs, left out), from the example's log; None
    without one."""
    if not log:
        return None
    with open(log) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    gaps, last, since_start = {}, None, 0
    for r in recs:
        if r.get("event") == "start":
            last, since_start = None, 0
            continue
        if "step" not in r or "loss" not in r:
            continue
        since_start += 1
        if last is not None and last["config"] == r["config"] and since_start > 2:
            gaps.setdefault(tuple(r["config"]), []).append(r["time"] - last["time"])
        last = r
    return {c: statistics.median(g) for c, g in gaps.items()} or None


def configs(generation):
    """(old, new) (T, P, D) of the schedule's change at ``generation``, or None."""
    sched = CONTEXT.get("schedule")
    if not sched:
        return None
    entries = sorted(sched, key=lambda e: e["step"])
    for prev, e in zip(entries, entries[1:]):
        if e["step"] == generation:
            return tuple(prev[k] for k in ("tp", "pp", "dp")), tuple(e[k] for k in ("tp", "pp", "dp"))
    return None


def touched(mode, generation, phases, move):
    """The phases' bytes and their ratio to the floor, as text and as {phase: ratio}."""
    cfg = configs(generation)
    if cfg is None or "model" not in CONTEXT:
        return "", {}
    import phase_bytes
    b = phase_bytes.phase_bytes(CONTEXT["model"], *cfg)
    secs = {"save": phases.get("save", 0), "move": move, "load": phases.get("load", 0)}
    ratio = {k: secs[k] / (b[k] / CONTEXT["floor"] / 1e9) for k in b}
    return ("; touched: " + ", ".join("%s %.2f GB (%.1fx floor)" % (k, b[k] / 1e9, ratio[k]) for k in b)
            + " %s -> %s" % cfg), ratio


def rows(mode, arg):
    path, _, log = arg.partition(",")
    steady = steady_step(log)
    with open(path) as f:
        status = json.load(f)
    for r in status["reconfigurations"]:
        d = r.get("downtime") or {}
        if not d.get("complete"):
            print("%s %s: change %s at generation %s has no complete split (%s)"
                  % (mode, status["job"], r["change"], r.get("generation"), d or "not reported"))
            continue
        p, daemon = d["phases"], d.get("daemon", {})
        smv = p.get("save", 0) + daemon.get("move", 0) + p.get("load", 0)
        split = ", ".join("%s %.3f" % (k, v) for k, v in p.items())
        text, ratio = touched(mode, r.get("generation"), p, daemon.get("move", 0))
        cfg = configs(r.get("generation"))
        step_of = steady.get(cfg[1]) if steady and cfg else None
        print("%-8s %-12s step %4s: downtime %.3f s, save+move+load %.3f s (%s; plan %.3f, move %.3f)%s"
              % (mode, status["job"], r.get("generation"), d["seconds"], smv, split, daemon.get("plan", 0),
                 daemon.get("move", 0), text))
        for k, v in (d.get("slowMoves") or {}).items():
            print("         the move on worker %s: %s" % (k, v))
        if step_of is not None and "first_step" in p:
            print("         steady step under %s %.3f s, first step %.2fx it" % (cfg[1], step_of, p["first_step"] / step_of))
        if mode == "live" and step_of is not None and ratio:
            bound = 1.5 * smv + step_of + 0.5
            print("         targets: downtime %.2f <= %.2f (1.5 x save+move+load + a step + 0.5 s): %s; each phase "
                  "<= 3x floor: %s; first step <= 1.2x steady: %s"
                  % (d["seconds"], bound, ok(d["seconds"] <= bound), ok(max(ratio.values()) <= 3),
                     ok(p["first_step"] <= 1.2 * step_of)))
        yield d["seconds"], smv, p.get("relaunch")


def ok(b):
    return "met" if b else "NOT met"


def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x):
    return "n/a" if x is None else "%.3f s" % x


def main(argv):
    got = {"live": [], "relaunch": [], "cold": []}
    argv = list(argv)
    while argv and argv[0] in ("--model", "--schedule"):
        flag, value = argv.pop(0), argv.pop(0)
        if flag == "--model":
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import phase_bytes
            CONTEXT["model"] = phase_bytes.model_args(shlex.split(value))
            CONTEXT["floor"] = phase_bytes.copy_floor_gbps()
            print("memory-copy floor: %.2f GB/s; state %.2f GB" % (CONTEXT["floor"],
                                                                phase_bytes.state_bytes(CONTEXT["model"]) / 1e9))
        else:
            with open(value) as f:
                CONTEXT["schedule"] = json.load(f)
    for a in argv:
        mode, path = a.split("=", 1)
        got[mode].extend(rows(mode, path))
    if got["cold"]:
        print("relaunch phase (commit to the new ranks' load): pre-started %s, cold %s; downtime: pre-started %s, "
              "cold %s (medians over %d and %d reconfigurations)"
              % (tuple(fmt(median([r[i] for r in got[m] if r[i] is not None])) for i, m in
                       ((2, "relaunch"), (2, "cold"), (0, "relaunch"), (0, "cold")))
                 + (len(got["relaunch"]), len(got["cold"]))))
    live = median([r[0] for r in got["live"]])
    relaunch = median([r[0] for r in got["relaunch"]])
    live_smv = median([r[1] for r in got["live"]])
    relaunch_smv = median([r[1] for r in got["relaunch"]])
    if relaunch is not None:
        print("relaunch: median downtime %.3f s over %d reconfigurations, median save+move+load %.3f s, "
              "relaunch/(save+move+load) %.1f" % (relaunch, len(got["relaunch"]), relaunch_smv,
                                                  relaunch / relaunch_smv if relaunch_smv else float("nan")))
    if live is None:
        print("live mode not available")
        print("downtime: live n/a, relaunch %s, relaunch/live n/a, live/(save+move+load) n/a"
              % ("%.3f s" % relaunch if relaunch is not None else "n/a"))
        return 0 if relaunch is not None else 1
    print("downtime: live %.3f s, relaunch %s, relaunch/live %s, live/(save+move+load) %.2f"
          % (live, "%.3f s" % relaunch if relaunch is not None else "n/a",
             "%.2f" % (relaunch / live) if relaunch is not None else "n/a", live / live_smv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
