"""The low-rank solve of the reduced PEP (``worst_case(..., solver="lowrank")``): its two bounds,
time and memory at growing sizes, against Clarabel's value where that is affordable.

Each case runs in its own process (peak resident memory from ``os.wait4``'s ``ru_maxrss``) under a
wall-clock limit; a case past the limit is stopped and reported as such. The setting is that of
benchmarks/bench_pep.py: the exponential graph, L = 1, zeta^2 = 1, ``gamma = min(sqrt(n/K), 1/L)``.

    .venv/bin/python benchmarks/pep_lowrank.py --cases 4:6 4:10 --reference     # with Clarabel's value
    .venv/bin/python benchmarks/pep_lowrank.py --cases 4:20 4:50 8:20 32:10 --limit 600

Columns: lower (the factors' value, a feasible point up to ``viol``, the largest constraint violation
relative to the scale), upper (``rhs^T y`` of the dual certificate, or None where its slack is not
PSD to tolerance), the relative gap, ``lmin`` (the dual slack's smallest eigenvalue relative to its
largest), the ranks per block, the interpolation pairs kept out of all of node 0's, the status.
Run one at a time on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from bench_pep import _pair, run_child  # the sibling script (benchmarks/ is the script's directory)

CHILD = r"""
import json, math, sys, time, warnings
import sgpverify as sv
from sgpverify import pep
n, K, ref = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
warnings.simplefilter("ignore")
g = min(math.sqrt(n / K), 1.0)
t = time.perf_counter()
wc = pep.worst_case(sv.graphs.exponential(n), K, L=1.0, step_size=g, zeta2=1.0, solver="lowrank")
out = dict(wc.bounds, n=n, K=K, seconds=time.perf_counter() - t, status=wc.status, blocks=list(wc.block_sizes))
out["all_pairs"] = wc.n_constraints - len(wc._model[0].quad)
if ref:
    t = time.perf_counter()
    rc = pep.worst_case(sv.graphs.exponential(n), K, L=1.0, step_size=g, zeta2=1.0)
    out.update(clarabel=rc.value, clarabel_status=rc.status, clarabel_seconds=time.perf_counter() - t)
print(json.dumps(out))
"""


def run_case(n: int, K: int, ref: bool, limit: float) -> dict:
    """One case in a child process: its record, wall seconds and peak RSS (MB, from os.wait4)."""
    c = run_child(CHILD, [str(n), str(K), "1" if ref else "0"], limit)
    sys.stderr.write(c["stderr"])  # the child's warnings and errors, as when it wrote to the terminal
    if c["stopped"] or not c["stdout"].strip():
        return dict(n=n, K=K, stopped=c["stopped"], failed=not c["stopped"], seconds=c["wall"], rss_mb=c["rss_mb"])
    r = json.loads(c["stdout"].strip().splitlines()[-1])
    r["rss_mb"] = c["rss_mb"]
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", type=lambda s: _pair(s, 2), default=[(4, 6), (4, 10)], help="n:K pairs")
    ap.add_argument("--reference", action="store_true", help="also solve with Clarabel (small sizes only)")
    ap.add_argument("--limit", type=float, default=600.0, help="seconds per case before it is stopped")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for n, K in args.cases:
        r = run_case(n, K, args.reference, args.limit)
        if args.json:
            print(json.dumps(r), flush=True)
            continue
        if r.get("failed"):
            print(f"n={n} K={K}: failed after {r['seconds']:.0f} s (the child's error is above)", flush=True)
            continue
        if r.get("stopped"):
            print(f"n={n} K={K}: stopped after {r['seconds']:.0f} s (limit {args.limit:.0f} s)", flush=True)
            continue
        up = r["upper"]
        gap = None if up is None else (up - r["lower"]) / abs(r["lower"])
        line = (
            f"n={n} K={K}: lower {r['lower']:.9g} upper {up if up is None else f'{up:.9g}'} "
            f"gap {gap if gap is None else f'{gap:.1e}'} viol {r['max_violation']:.1e} lmin {r['lambda_min']:.1e} "
            f"ranks {r['rank']} pairs {r['pairs']}/{r['all_pairs']} {r['status']} "
            f"{r['seconds']:.1f} s, peak RSS {r['rss_mb']:.0f} MB"
        )
        if "clarabel" in r:
            line += (
                f"; Clarabel {r['clarabel']:.9g} ({r['clarabel_status']}, {r['clarabel_seconds']:.1f} s), "
                f"lower - Clarabel {(r['lower'] - r['clarabel']) / abs(r['clarabel']):.1e} relative"
            )
        print(line, flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
