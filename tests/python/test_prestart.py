"""tenplex.launchers.prestart (the pre-started rank interpreter of tenplex run's relaunch mode) with real processes,
run as tenplex run runs it (python -c <source> SCRIPT ARGS...): a go line runs the script in-process as
`python SCRIPT ARGS...` would (argv, __name__, __file__, the script's directory on sys.path, the
environment of the go line, the script's exit status, torch already imported); exit and the end of input
exit 0 without running it; a malformed go line is refused (exit 2) before anything runs. Prints OK; any
failure raises."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..", "clients", "python", "tenplex", "launchers", "prestart.py")
PYTHON = "/usr/bin/python3"

SCRIPT = r'''
import json, os, sys
import helper  # found in the script's own directory, as under python SCRIPT
print(json.dumps({"name": __name__, "argv": sys.argv, "file": __file__, "rank": os.environ.get("RANK"),
                  "config": os.environ.get("TENPLEX_CONFIG"), "torch_before": helper.TORCH,
                  "path0": sys.path[0], "stdin": sys.stdin.read()}), flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "fail":
    sys.exit(7)
'''


def prestart(script, args, stdin):
    with open(SOURCE) as f:
        source = f.read()
    return subprocess.run([PYTHON, "-c", source, script] + args, input=stdin, capture_output=True, text=True,
                          timeout=120)


def main():
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "train.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        with open(os.path.join(d, "helper.py"), "w") as f:
            f.write("import sys\nTORCH = 'torch' in sys.modules\n")
        env = {"RANK": "3", "TENPLEX_CONFIG": json.dumps({"tp": 2, "devices": [[0, 1]]}) + " é\u00e9"}

        r = prestart(script, ["--lr", "0.1 x"], "go %s\n" % json.dumps(env))
        assert r.returncode == 0, r
        seen = json.loads(r.stdout.strip().splitlines()[-1])
        assert seen["name"] == "__main__", seen
        assert seen["argv"] == [script, "--lr", "0.1 x"], seen
        assert seen["file"] == script and seen["path0"] == d, seen
        assert seen["rank"] == "3" and seen["config"] == env["TENPLEX_CONFIG"], seen  # every byte of the values
        assert seen["torch_before"] is True, "torch is imported before the go: %s" % seen
        assert seen["stdin"] == "", seen  # the launcher's line is not the script's input

        r = prestart(script, ["x", "fail"], "go {}\n")
        assert r.returncode == 7, r  # the script's exit status is the process's

        for stdin in ("exit\n", ""):
            r = prestart(script, [], stdin)
            assert r.returncode == 0 and r.stdout == "", r  # told to exit, or the launcher is gone: nothing runs

        for bad in ("go [1]\n", 'go {"RANK": 3}\n', "go {\n", "run\n"):
            r = prestart(script, [], bad)
            assert r.returncode == 2 and r.stdout == "" and "tenplex prestart: " in r.stderr, (bad, r)

        r = prestart("-m", ["x"], "go {}\n")
        assert r.returncode == 2 and "usage" in r.stderr, r
    print("OK")


if __name__ == "__main__":
    sys.exit(main())
