"""bench/gpu-check run: starts tenplexd from the pack and runs the GPU-path checks, each in its own
process with a time limit, within an overall budget; writes gpu-check.json and prints a table.

  1 stop      tenplex.should_stop in a real NCCL group and a mixed cpu:gloo,cuda:nccl group (gloo on a CPU)
  2 roundtrip device tensors of every dtype, shared memory and REST, new tensors and load(into=...)
  3 state     a GPT-like state: the device-to-host floor, torch.save/load, DCP, tenplex saves and loads,
              the step time beside an asynchronous save
  4 dtensor   a DTensor model described, saved, reconfigured T=2 -> T=1 and compared
  5 elastic   the README's elastic example with tensors on the device, against its static run
"""

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = {1: "stop", 2: "roundtrip", 3: "state", 4: "dtensor", 5: "elastic"}
LIMITS = {"stop": 60, "roundtrip": 90, "state": 240, "dtensor": 90, "elastic": 240}


class Daemon:
    """tenplexd from the pack, on a free loopback port; restarted when a check kills it."""

    def __init__(self, pack, memory_gb, data_root, out):
        self.java = os.path.join(pack, "jre", "bin", "java")
        if not os.path.exists(self.java):
            self.java = shutil.which("java")
        self.jar = os.path.join(pack, "tenplexd.jar")
        self.memory_gb, self.data_root, self.out = memory_gb, data_root, out
        self.proc, self.addr, self.starts = None, None, 0

    def start(self):
        mib = int(self.memory_gb * 1024)
        cmd = [self.java, "-XX:MaxDirectMemorySize=%dm" % (mib + 1024), "-XX:ErrorFile=%s/hs_err_%%p.log" % self.out,
               "-jar", self.jar, "--port", "0", "--memory-limit", "%dm" % mib, "--data-root", self.data_root]
        log = open(os.path.join(self.out, "tenplexd-%d.log" % self.starts), "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.starts += 1
        deadline = time.time() + 60
        for line in self.proc.stdout:
            log.write(line)
            m = re.search(r"ready on (http://[\d.]+:\d+)", line)
            if m:
                self.addr = m.group(1)
                break
            if time.time() > deadline:
                break
        if self.addr is None:
            raise SystemExit("gpu-check: tenplexd did not start (see %s)" % log.name)

        def drain():  # keep the daemon's output flowing into its log
            for line in self.proc.stdout:
                log.write(line)
            log.close()
        threading.Thread(target=drain, daemon=True).start()
        return self.addr

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_check(name, argv, limit, out, env):
    """Runs one check's script; returns its result record."""
    result = os.path.join(out, "%s.json" % name)
    if os.path.exists(result):
        os.remove(result)
    log = os.path.join(out, "%s.log" % name)
    t = time.perf_counter()
    with open(log, "w") as f:
        p = subprocess.Popen([sys.executable] + argv + ["--result", result], stdout=f, stderr=subprocess.STDOUT,
                             env=env, start_new_session=True)
        try:
            p.wait(limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            return {"status": "fail", "summary": "did not end within its limit of %d s (log: %s)" % (limit, log),
                    "seconds": round(time.perf_counter() - t, 1)}
    seconds = round(time.perf_counter() - t, 1)
    if os.path.exists(result):
        with open(result) as f:
            rec = json.load(f)
    else:
        rec = {"status": "fail", "summary": "exited %d without a result (a crash? log: %s)" % (p.returncode, log)}
    rec["seconds"] = seconds
    if p.returncode != 0 and rec["status"] == "ok":
        rec["status"], rec["summary"] = "fail", "exited %d after writing ok" % p.returncode
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pack", required=True)
    ap.add_argument("--device", choices=("cpu", "cuda"))
    ap.add_argument("--size-gb", type=float, help="the state of check 3 (default 4.25 on cuda, 0.05 on cpu)")
    ap.add_argument("--rounds", type=int, help="rounds of check 3 (default 3 on cuda, 2 on cpu)")
    ap.add_argument("--only", help="checks to run, e.g. 1,2,5 (default all)")
    ap.add_argument("--budget", type=float, default=450, help="seconds for the whole run (default 450)")
    ap.add_argument("--out", help="where results go (default PACK/out)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    import torch
    cuda = torch.cuda.is_available()
    device = a.device or ("cuda" if cuda else "cpu")
    if device == "cuda" and not cuda:
        raise SystemExit("gpu-check: --device cuda, but torch %s sees no CUDA device" % torch.__version__)
    size = a.size_gb if a.size_gb is not None else (4.25 if device == "cuda" else 0.05)
    rounds = a.rounds or (3 if device == "cuda" else 2)
    out = os.path.abspath(a.out or os.path.join(a.pack, "out"))
    os.makedirs(out, exist_ok=True)
    only = sorted(int(x) for x in a.only.split(",")) if a.only else sorted(CHECKS)
    work = tempfile.mkdtemp(prefix="gpu-check-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(a.pack, "python"), os.path.join(a.pack, "gpu"), os.environ.get("PYTHONPATH", "")]))
    gpu = torch.cuda.get_device_name(0) if cuda else None
    host = {"device": device, "gpu": gpu, "torch": torch.__version__, "cuda": torch.version.cuda,
            "python": platform.python_version(), "cpus": os.cpu_count(), "size_gb": size, "rounds": rounds}
    print("gpu-check: %s" % json.dumps(host), flush=True)
    daemon = Daemon(a.pack, max(2.0, 4 * size + 2), work, out)
    results = {}
    try:
        addr = daemon.start()
        common = ["--addr", addr, "--device", device]
        java = [daemon.java, "-Xmx2g", "-cp", os.path.join(a.pack, "tenplexd.jar") + os.pathsep
                + os.path.join(a.pack, "tenplex-cli.jar"), "io.tenplex.cli.TenplexCli"]
        plan = []
        for n in only:
            name = CHECKS[n]
            script = os.path.join(HERE, "check_%s.py" % ("elastic_run" if name == "elastic" else name))
            if name == "stop":
                for backend in ("nccl", "cpu:gloo,cuda:nccl", "gloo"):
                    plan.append(("stop %s" % backend, [script] + common + ["--backend", backend], 60))
            elif name == "state":
                plan.append((name, [script] + common + ["--size-gb", str(size), "--rounds", str(rounds)],
                             LIMITS[name]))
            elif name == "elastic":
                plan.append((name, [script] + common + ["--work", os.path.join(work, "elastic"), "--tenplex",
                                                        json.dumps(java)], LIMITS[name]))
            else:
                plan.append((name, [script] + common, LIMITS[name]))
        for name, argv, limit in plan:
            left = a.budget - (time.perf_counter() - t0)
            if left < 15:
                results[name] = {"status": "skipped", "summary": "the run's budget of %.0f s was spent" % a.budget,
                                 "seconds": 0}
                continue
            if not daemon.alive():
                addr = daemon.start()
                argv = [addr if x == common[1] else x for x in argv]
            print("== %s (limit %.0f s)" % (name, min(limit, left)), flush=True)
            results[name] = run_check(name.replace(" ", "-").replace(":", "").replace(",", "-"), argv,
                                      min(limit, left), out, env)
            if not daemon.alive():
                results[name]["status"] = "fail"
                results[name]["summary"] += "; tenplexd died during this check (exit %s)" % daemon.proc.returncode
            print("   %s: %s" % (results[name]["status"], results[name]["summary"]), flush=True)
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)
    crashes = [f for f in os.listdir(out) if f.startswith("hs_err_")]
    report = {"host": host, "checks": results, "seconds": round(time.perf_counter() - t0, 1), "jvm_crash_files": crashes}
    with open(os.path.join(out, "gpu-check.json"), "w") as f:
        json.dump(report, f, indent=1)
    print()
    print(table(report))
    failed = [n for n, r in results.items() if r["status"] == "fail"] + (["jvm crash"] if crashes else [])
    print("gpu-check: %d checks, %d failed%s; %.0f s; %s" % (len(results), len(failed),
                                                             " (%s)" % ", ".join(failed) if failed else "",
                                                             report["seconds"], os.path.join(out, "gpu-check.json")))
    return 1 if failed else 0


def table(report):
    h = report["host"]
    lines = ["GPU check on %s (torch %s, CUDA %s, %s CPUs)" % (h["gpu"] or "the CPU", h["torch"], h["cuda"], h["cpus"]),
             "", "| check | result | s | what |", "|---|---|---|---|"]
    for name, r in report["checks"].items():
        lines.append("| %s | %s | %s | %s |" % (name, r["status"], r.get("seconds", ""), r["summary"].replace("|", "/")))
    rows = report["checks"].get("state", {}).get("figures", {}).get("rows")
    if rows:
        lines += ["", "| state of %s GB | s | GB/s | x floor |" % report["checks"]["state"]["figures"]["state"]["GB"],
                  "|---|---|---|---|"]
        for name, r in rows.items():
            lines.append("| %s | %.3f | %.2f | %.2f |" % (name, r["s"], r["GB/s"], r["x_floor"]))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
