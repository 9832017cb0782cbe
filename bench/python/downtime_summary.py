"""The figures of bench/reconfigure-downtime: reads each run's downtime status (the daemon's
GET /api/v1/jobs/<job>/downtime, saved as JSON) and prints, per reconfiguration, its downtime split and the
sum of save + move + load (the daemon's move, the ranks' save and load), then the medians over the
reconfigurations and rounds of each mode. The last line is
``downtime: live X s, relaunch Y s, relaunch/live R, live/(save+move+load) Q``; with cold runs (relaunch
with --no-prestart) a line before it compares them with the relaunch runs (pre-started interpreters).
Usage: downtime_summary.py MODE=FILE [MODE=FILE ...]   (MODE: live, relaunch or cold; a mode may repeat)"""
import json
import statistics
import sys


def rows(mode, path):
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
        print("%-8s %-12s step %4s: downtime %.3f s, save+move+load %.3f s (%s; plan %.3f, move %.3f)"
              % (mode, status["job"], r.get("generation"), d["seconds"], smv, split, daemon.get("plan", 0),
                 daemon.get("move", 0)))
        yield d["seconds"], smv, p.get("relaunch")


def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x):
    return "n/a" if x is None else "%.3f s" % x


def main(argv):
    got = {"live": [], "relaunch": [], "cold": []}
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
