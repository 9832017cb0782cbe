"""The rehearsal buffer across four daemons (run by RehearsalIT; one daemon per worker, started with
--peers): four trainer processes fill ranks 0 to 3 with 1, 3, 6 and 10 representatives of each of 4
classes (80 in all, every one distinct), then

1. global sampling is unbiased: 2500 draws of r = 8 for rank 0 (on daemon 0) pick every one of the
   80 representatives equally often (chi-square over 79 degrees of freedom below the p = 0.001
   critical value; the daemons' seed is fixed, so the draws are the same every run), while two
   deliberately biased samplers fail the same test: rank 0's own buffer only (the local scope), and
   "a random rank, then its own buffer" (unequal buffers make that non-uniform);
2. the buffer survives a resize: a resource change to (T,P,D) = (1,1,2) on workers 0 and 1 re-partitions
   it (the resource change's event says so); each new rank holds 10 of each class, the two together
   every one of the 80 exactly once, and daemons 2 and 3 hold none;
3. two trainer processes then train 6 steps: from the second step every minibatch of 8 is augmented
   with r = 4 representatives (with their labels and extra parts), drawn from both new ranks' buffers;
4. /metrics shows it: rank 0's representatives, draws (and their latency), bytes fetched for draws
   and for the re-partition, and the augments the trainer reported (tenplex_rehearsal_*);
5. a trainer with two draws in flight (ahead=2) gets its first representatives at its third step.

Usage: rehearsal_cluster.py <daemon-url> x 4"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))

import numpy as np  # noqa: E402

import tenplex  # noqa: E402
from tenplex.rehearsal import RehearsalBuffer  # noqa: E402

JOB = "cl"
FILL = [1, 3, 6, 10]
HERE = os.path.dirname(os.path.abspath(__file__))


def trainers(args_per_rank):
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "rehearsal_trainer.py")] + [str(a) for a in args],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for args in args_per_rank]
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        print(out, end="", flush=True)
        assert p.returncode == 0, out
        outs.append(out)
    return outs


def critical(df, p=0.001):
    """The chi-square value exceeded with probability p under the null hypothesis."""
    try:
        from scipy.stats import chi2
        return chi2.ppf(1 - p, df)
    except ImportError:  # Wilson-Hilferty, z(0.999) = 3.0902
        return df * (1 - 2 / (9 * df) + 3.0902 * (2 / (9 * df)) ** 0.5) ** 3


def chi_square(counts, ids, draws):
    expected = draws / len(ids)
    return sum((counts.get(i, 0) - expected) ** 2 / expected for i in ids)


def ids_of(samples):
    return [tuple(int(v) for v in parts[0][:3]) for _, parts in samples]


def unbiased(urls, every):
    buf = RehearsalBuffer(JOB, 0, client=tenplex.Client(urls[0]))
    local = [RehearsalBuffer(JOB, r, client=tenplex.Client(urls[r]), scope="local") for r in range(4)]
    rng = np.random.default_rng(5)
    counts = {"global": {}, "local": {}, "rank, then local": {}}
    picked = {k: 0 for k in counts}
    for _ in range(2500):
        for name, samples in (("global", buf.sample(8)), ("local", local[0].sample(8)),
                              ("rank, then local", local[int(rng.integers(4))].sample(8))):
            got = ids_of(samples)
            assert len(set(got)) == len(got), "without replacement within a draw"
            picked[name] += len(got)
            for i in got:
                counts[name][i] = counts[name].get(i, 0) + 1
    limit = critical(len(every) - 1)
    stats = {k: chi_square(counts[k], every, picked[k]) for k in counts}
    print("chi-square over %d df (p = 0.001 limit %.1f): %s" % (len(every) - 1, limit, json.dumps(stats)), flush=True)
    assert set(counts["global"]) == set(every), "every representative is reachable"
    assert stats["global"] < limit, stats
    assert stats["local"] > limit and stats["rank, then local"] > limit, stats


def resize(urls, every):
    c = tenplex.Client(urls[0])
    started = c.request("POST", "/api/v1/jobs/%s/resources" % JOB, ok=(202,), json={
        "devices": [[0, 0], [1, 0]], "config": {"tp": 1, "pp": 1, "dp": 2}, "recover": True}).json()
    status = c.request("GET", started["status"] + "?wait=true").json()
    while status.get("state") in ("stopping", "reconfiguring"):
        status = c.request("GET", started["status"] + "?wait=true").json()
    assert status.get("state") == "done", status
    events = [e for e in status["events"] if "rehearsal" in e]
    print("resize: %s" % events, flush=True)
    assert events and "re-partitioned over 2 data-parallel ranks: 80 representatives" in events[0], status
    held = []
    where = {}
    for r, url in enumerate(urls):
        ranks = tenplex.Client(url).request("GET", "/api/v1/jobs/%s/rehearsal" % JOB).json()["ranks"]
        assert ranks == ({str(r): [10, 10, 10, 10]} if r < 2 else {}), (r, ranks)
        if r < 2:
            mine = ids_of(RehearsalBuffer(JOB, r, client=tenplex.Client(url), scope="local").sample(40))
            held += mine
            where.update({i: r for i in mine})
    assert sorted(held) == sorted(every), "each of the 80 survives, on one rank only"
    return where


def main(urls):
    for url in urls:
        tenplex.put_file("/job/%s/model.json" % JOB, json.dumps({"layers": 1, "tensors": [
            {"name": "w", "dtype": "f32", "shape": [4], "partition": {"kind": "replicated"}, "stage": "first"}],
            "values": []}), tenplex.Client(url))
    trainers([["fill", urls[r], JOB, r, 4, FILL[r]] for r in range(4)])
    every = [(r, k, i) for r in range(4) for k in range(4) for i in range(FILL[r])]
    unbiased(urls, every)
    where = resize(urls, every)
    outs = trainers([["train", urls[r], JOB, r, 6, 4] for r in range(2)])
    for out in outs:
        report = json.loads(out.strip().splitlines()[-1])
        assert report["sizes"] == [8] + [12] * 5, report
        held_by = {where[tuple(i)] for i in report["reps"] if tuple(i) in where}
        assert held_by == {0, 1}, "representatives from both new ranks' buffers: %s" % report
    scraped(urls)
    report = json.loads(trainers([["train", urls[0], JOB, 0, 6, 4, 2]])[0].strip().splitlines()[-1])
    assert report["sizes"] == [8, 8] + [12] * 4, "two draws in flight: augmented from the third step on: %s" % report
    print("OK", flush=True)


def metric(text, name, labels):
    """The value of ``name{labels}`` in a /metrics scrape (labels as the daemon writes them)."""
    for line in text.splitlines():
        if line.startswith(name + "{" + labels + ",}") or line.startswith(name + "{" + labels + "}"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("%s{%s} not in /metrics" % (name, labels))


def scraped(urls):
    """What /metrics says of rank 0 on daemon 0 and of the re-partition's moves (tenplex_rehearsal_*)."""
    texts = [tenplex.Client(u).request("GET", "/metrics").text for u in urls]
    rank0 = 'job="%s",rank="0"' % JOB
    assert metric(texts[0], "tenplex_rehearsal_representatives", rank0) == 40, "full: candidates replace"
    assert metric(texts[0], "tenplex_rehearsal_augments_total", rank0) == 5, "steps 2 to 6 reported their augment"
    assert metric(texts[0], "tenplex_rehearsal_draws_total", rank0) >= 2500 + 5
    assert metric(texts[0], "tenplex_rehearsal_draw_seconds_count", rank0) >= 2500 + 5
    assert metric(texts[0], "tenplex_rehearsal_fetched_bytes_total", rank0 + ',purpose="draw"') > 0
    moved = sum(metric(texts[d], "tenplex_rehearsal_fetched_bytes_total", 'job="%s",rank="%d",purpose="repartition"'
                       % (JOB, d)) for d in range(2))
    assert moved > 0, "the re-partition fetched representatives from other daemons"
    print("metrics: rank 0 waited for %d of its 5 draws" % metric(texts[0], "tenplex_rehearsal_augment_waits_total",
                                                                  rank0), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
