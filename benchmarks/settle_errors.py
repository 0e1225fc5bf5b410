"""Error control of ``verify --settle``: false verdicts over many seeds, with and without settling.

On an honest setting (a problem whose declared constants hold and whose claims the theory makes), a
``fail`` is a false fail. The script runs the chosen checks on seeds 0..S-1 with a short ladder that
often leaves them inconclusive, then settles them, and counts per check:

- planned: pass / fail / inconclusive of the planned run;
- settled: the same after settling (rounds on fresh noise, round r at error rate 0.05 * 2^-r).

Settling may only turn inconclusive verdicts into decisive ones; the number of fails may grow only by
false fails of the rounds, which docs/theory.md ("Settling") bounds by 0.05 per check in all.

    .venv/bin/python benchmarks/settle_errors.py                    # 30 seeds, about 5 min on 2 cores
    .venv/bin/python benchmarks/settle_errors.py --seeds 10 --json
    .venv/bin/python benchmarks/settle_errors.py --setting random-graph --seeds 10

``--setting random-graph``: the guide's own problem (docs/examples/mymod.py, one data shard per node)
on Erdos-Renyi (n = 16, p = 0.3, a new graph per seed) with the quick preset's ladders, where the
rate and delay checks start outside the step-size regime (the push-sum weights of a random graph
take some steps' effective step beyond 2/L) and settling moves their ladders into it.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys
import time

from sgpverify import suite

CHECKS = ("stationarity-rate", "consensus-rate", "topology-ratio")
SHORT = dict(Ks=(64, 128, 256), rate_replicas=4, topology_Ks=(128, 256, 512), topology_replicas=4)
RANDOM_GRAPH = ("stationarity-rate", "consensus-rate", "delay-rate", "delay-robustness")


def setting(name):
    """(checks, keyword arguments of suite.verify) of a setting."""
    if name == "short-ladders":
        return CHECKS, dict(SHORT)
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "examples"))
    return RANDOM_GRAPH, dict(problem="mymod:make", topology="erdos-renyi", nodes=16, edge_prob=0.3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--budget", type=float, default=2.0, help="minutes of settling per seed (default 2)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--setting", choices=("short-ladders", "random-graph"), default="short-ladders")
    a = ap.parse_args(argv)
    checks, kw = setting(a.setting)
    planned = collections.Counter()
    settled = collections.Counter()
    rounds = collections.Counter()
    fails = []
    t0 = time.perf_counter()
    for seed in range(a.seeds):
        res = suite.verify(only=list(checks), seed=seed, settle=True, budget=a.budget, **kw)
        rec = res.settle["checks"]
        for c in res.checks:
            before = rec.get(c.name, {}).get("before", c.verdict)
            planned[c.name, before] += 1
            settled[c.name, c.verdict] += 1
            rounds[c.name] += len(rec.get(c.name, {}).get("rounds", []))
            if c.verdict == "fail":
                fails.append((seed, c.name, before, c.measured))
    out = {
        "seeds": a.seeds,
        "checks": {
            name: {
                "planned": {v: planned[name, v] for v in ("pass", "fail", "inconclusive")},
                "settled": {v: settled[name, v] for v in ("pass", "fail", "inconclusive")},
                "rounds": rounds[name],
            }
            for name in checks
        },
        "fails": fails,
        "seconds": time.perf_counter() - t0,
    }
    if a.json:
        print(json.dumps(out))
        return
    print(f"{a.seeds} seeds, {a.setting} {kw}, budget {a.budget:g} min per seed ({out['seconds']:.0f} s)")
    print(f"{'check':<20} {'planned P/F/I':<16} {'settled P/F/I':<16} rounds")
    for name, c in out["checks"].items():
        p, s = c["planned"], c["settled"]
        print(
            f"{name:<20} {p['pass']:>3}/{p['fail']:>2}/{p['inconclusive']:>3}      "
            f"{s['pass']:>3}/{s['fail']:>2}/{s['inconclusive']:>3}      {c['rounds']}"
        )
    for f in fails:
        print("fail:", f)


if __name__ == "__main__":
    main()
