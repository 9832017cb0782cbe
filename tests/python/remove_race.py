"""``tenplex rm`` racing a save, against a real daemon (TENPLEX_ADDR): ROUNDS times (argv[1], default 100)
a trainer saves rank 0 of job ``rmrace`` at step 7 (world 1; argv[2] ``rest`` or ``shared``: over REST or
through shared memory) while another thread removes the job, the two a few milliseconds apart (the
removal's start varies from round to round, so that it lands in every phase of the save: the upload,
the seal, the commit). Each round starts from a removed job.

Either may win, or the save may be refused (a 4xx naming why: its reservation ended, the job was
removed while it saved); what must never happen: a 5xx, a dropped connection, a generation listed
complete that does not load the bytes saved as it (``NoCheckpoint``, an empty state), and a job name left
stuck (a job with no complete generation that refuses a save of an older step). Prints the counts and
OK at the end; any failure raises."""

import os
import random
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import shared_memory as shm  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
JOB = "rmrace"
STEP = 7
N = 1 << 16  # f32 elements: 256 KiB per save
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
SHARED = (sys.argv[2] if len(sys.argv) > 2 else "rest") == "shared"

check = tenplex.Client(ADDR)
assert not SHARED or shm.available(check), "the daemon has no usable shared memory"


def state(value):
    return {"w": torch.full((N,), float(value)), "meta": {"value": value}}


def remove(client):
    """Removes the job: 200, or 404 when there is nothing of it; anything else fails the round."""
    r = client.session.request("DELETE", ADDR + "/api/v1/jobs/" + JOB, timeout=60)
    assert r.status_code in (200, 404), "rm answered %d: %s" % (r.status_code, r.text)
    return r.status_code


def save(client, value, out):
    try:
        out["save"] = ("ok", tenplex.save(state(value), job=JOB, step=STEP, rank=0, world=1, client=client,
                                          shared=SHARED))
    except tenplex.TenplexError as e:
        out["save"] = ("refused", e)


def race(value, delay, clients):
    out = {}
    barrier = threading.Barrier(2)

    def saver():
        barrier.wait()
        save(clients[0], value, out)

    def remover():
        barrier.wait()
        threading.Event().wait(delay)  # jitter: where in the save the removal lands, not synchronisation
        out["rm"] = remove(clients[1])

    threads = [threading.Thread(target=saver), threading.Thread(target=remover)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def generations():
    r = check.request("GET", "/api/v1/jobs/%s/generations" % JOB, ok=(200, 404))
    return None if r.status_code == 404 else r.json()


def check_loads(value, r):
    """A generation listed complete loads the bytes saved as it."""
    g = generations()
    complete = [x["step"] for x in (g or {}).get("generations", []) if x.get("complete")]
    if g is None or g.get("current") is None:
        assert not complete, "round %d: generations %s listed complete without a current one: %s" % (r, complete, g)
        return False
    assert g["current"] == STEP and complete == [STEP], "round %d: %s" % (r, g)
    try:
        got, step = tenplex.load(job=JOB, rank=0, client=check)
    except tenplex.TenplexError as e:
        raise AssertionError("round %d: generation %d is listed complete but does not load: %s (%s)"
                             % (r, STEP, e, g)) from None
    assert step == STEP, (r, step)
    assert set(got) == {"w", "meta"}, "round %d: generation %d loads as %r" % (r, STEP, got)
    assert got["meta"] == {"value": value}, "round %d: %r" % (r, got["meta"])
    assert torch.equal(got["w"], state(value)["w"]), "round %d: the tensor's bytes differ" % r
    return True


def check_not_stuck(value, r):
    """A job without a complete generation takes a save of any step, which then loads."""
    tenplex.save(state(value), job=JOB, step=STEP - 4, rank=0, world=1, client=check, shared=SHARED)
    got, step = tenplex.load(job=JOB, rank=0, client=check)
    assert step == STEP - 4 and got["meta"] == {"value": value}, "round %d: %s %r" % (r, step, got.get("meta"))


clients = [tenplex.Client(ADDR), tenplex.Client(ADDR)]
rnd = random.Random(int(os.environ.get("TENPLEX_RACE_SEED", "7")))
counts = {"saved": 0, "refused": 0, "kept": 0, "removed": 0}
reasons = set()
for r in range(ROUNDS):
    remove(check)
    value = r + 1
    out = race(value, rnd.uniform(0, 0.012), clients)
    how, answer = out["save"]
    if how == "refused":
        assert answer.status is not None and 400 <= answer.status < 500, "round %d: the save failed: %r" % (r, answer)
        counts["refused"] += 1
        reasons.add("%d %s" % (answer.status, str(answer)[:110]))
    else:
        assert answer.get("complete") is True, (r, answer)
        counts["saved"] += 1
    if check_loads(value, r):
        counts["kept"] += 1
    else:
        counts["removed"] += 1
        check_not_stuck(1000 + value, r)
remove(check)
print("rounds=%d %s shared=%s" % (ROUNDS, " ".join("%s=%d" % kv for kv in sorted(counts.items())), SHARED))
for reason in sorted(reasons):
    print("refused: " + reason)
assert counts["saved"] > 0, counts
print("OK")
