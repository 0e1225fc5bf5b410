"""How far the exact worst case (sgpverify.pep.worst_case) reaches with the symmetry reduction.

Part 1, the ratio: the full SDP and the reduced SDP of the same schedule, solved in one run,
their values and the time ratio full / reduced.
Part 2, the scale: the reduced SDP on the exponential graph at (n, K) pairs, each in its own
process (its peak resident memory measured by the OS: ``os.wait4``'s ``ru_maxrss``) under a
wall-clock limit; a case past the limit is stopped and reported as such, never extrapolated.

    .venv/bin/python benchmarks/bench_pep.py                          # parts 1 and 2, defaults
    .venv/bin/python benchmarks/bench_pep.py --ratio 8:4 --cases 32:20 --limit 600
    .venv/bin/python benchmarks/bench_pep.py --ratio --cases 16:10 --feasibility   # every node's constraints
    .venv/bin/python benchmarks/bench_pep.py --json

Run one at a time: the solver is single-threaded, and other work on a 2-core machine shows up
in the seconds (the load average is printed at the start and the end).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, math, sys, time, warnings
import sgpverify as sv
from sgpverify import pep
n, K, sym = int(sys.argv[1]), int(sys.argv[2]), (None if sys.argv[3] == "full" else "auto")
solver, opts = sys.argv[5], json.loads(sys.argv[6])
warnings.simplefilter("ignore")
from sgpverify.pep import reduced, worstcase
seen = []  # the cvxpy problem of the solve, for its compile and solve times
def spy(f):
    def g(*a, **k):
        prob, dual = f(*a, **k)
        seen.append(prob)
        return prob, dual
    return g
reduced.maximize_measure = spy(reduced.maximize_measure)
worstcase.solve_direct.__globals__["maximize_measure"] = reduced.maximize_measure
t = time.perf_counter()
wc = pep.worst_case(sv.graphs.exponential(n), K, L=1.0, step_size=min(math.sqrt(n / K), 1.0), zeta2=1.0, symmetry=sym,
                    solver=solver, solver_options=opts)
out = dict(n=n, K=K, symmetry=wc.symmetry, blocks=list(wc.block_sizes), gram=wc.gram_size, solver=solver,
           constraints=wc.n_constraints, status=wc.status, value=wc.value, seconds=time.perf_counter() - t)
if seen:
    st = seen[-1].solver_stats
    out["compile_s"] = seen[-1].compilation_time
    out["solve_s"] = st.solve_time
    out["iters"] = st.num_iters
    info = st.extra_stats.get("info", {}) if isinstance(st.extra_stats, dict) else {}
    for k in ("status", "res_pri", "res_dual", "gap", "pobj", "dobj", "cone_time", "lin_sys_time", "setup_time"):
        if k in info:
            out["scs_" + k] = info[k]
if wc.check is not None:  # the a-posteriori check of a first-order solve (sgpverify.pep.posterior)
    out["check"] = wc.check
if sys.argv[4] == "1":  # every node's constraints at the solution read back as a full Gram matrix
    import numpy as np
    from sgpverify.pep.formulation import full_violation
    md, _ = wc._model
    out["max_violation"] = full_violation(md, wc.gram, md.F, 1.0)
    out["scale"] = float(np.abs(wc.gram).max())
print(json.dumps(out))
"""


def _pair(s: str, least_n: int = 1) -> tuple[int, int]:
    try:
        n, K = (int(x) for x in s.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a case must be n:K (two integers), got {s!r}") from None
    if n < least_n or K < 1:
        raise argparse.ArgumentTypeError(f"a case must have n >= {least_n} and K >= 1, got {s!r}")
    return n, K


def run_child(code: str, args: list[str], limit: float) -> dict:
    """``python -c code *args`` in a child process, killed after ``limit`` seconds: its exit code,
    stdout and stderr, wall seconds, peak RSS (MB, from os.wait4) and whether it was stopped."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fout, tempfile.TemporaryFile("w+") as ferr:
        p = subprocess.Popen([sys.executable, "-c", code, *args], stdout=fout, stderr=ferr, env=env)
        timed_out = False
        while True:  # os.wait4 reaps the child and gives its own rusage (peak RSS)
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > limit and not timed_out:
                p.kill()
                timed_out = True
            time.sleep(0.2)
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen from waiting again
        fout.seek(0)
        ferr.seek(0)
        stdout, stderr = fout.read(), ferr.read()
    return dict(
        code=p.returncode,
        stdout=stdout,
        stderr=stderr,
        wall=time.perf_counter() - t0,
        rss_mb=ru.ru_maxrss / 1024,
        stopped=timed_out,
    )


def run_case(
    n: int,
    K: int,
    mode: str,
    limit: float,
    feasibility: bool = False,
    solver: str = "CLARABEL",
    options: dict | None = None,
) -> dict:
    """One worst case in a child process: its record, wall seconds and peak RSS (MB)."""
    args = [str(n), str(K), mode, "1" if feasibility else "0", solver, json.dumps(options or {})]
    c = run_child(CHILD, args, limit)
    out = {"n": n, "K": K, "mode": mode, "wall_s": c["wall"], "peak_rss_mb": c["rss_mb"]}
    if c["stopped"]:
        out["result"] = f"stopped after {limit:.0f} s (no value)"
    elif c["code"] != 0:
        out["result"] = "failed: " + c["stderr"].strip().splitlines()[-1]
    else:
        out.update(json.loads(c["stdout"].strip().splitlines()[-1]))
        out["result"] = "solved"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ratio", type=_pair, nargs="*", default=[_pair("4:6"), _pair("8:4")], help="n:K, full vs reduced")
    ap.add_argument("--cases", type=_pair, nargs="*", default=[_pair("8:10"), _pair("16:10"), _pair("32:10")])
    ap.add_argument("--limit", type=float, default=600.0, help="wall-clock limit per case, seconds")
    ap.add_argument(
        "--feasibility",
        action="store_true",
        help="also check every node's constraints at the reduced solution (L = 1; costs n times node 0's)",
    )
    ap.add_argument("--solver", default="CLARABEL", help="the cvxpy solver of part 2 (part 1 uses Clarabel)")
    ap.add_argument(
        "--options", type=json.loads, default={}, help="solver options of part 2, JSON ('{\"eps_abs\": 1e-6}')"
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.limit <= 0:
        ap.error(f"--limit must be > 0, got {a.limit}")
    if not isinstance(a.options, dict):
        ap.error(f"--options must be a JSON object, got {a.options!r}")
    res = {"load_start": os.getloadavg(), "ratio": [], "scale": []}
    say = (lambda *x: None) if a.json else print
    say(f"load average at start: {res['load_start']}")
    say("\nPart 1: full vs reduced SDP, exponential graph, gamma = min(sqrt(n/K), 1/L), L = 1, zeta2 = 1")
    for n, K in a.ratio:
        full = run_case(n, K, "full", a.limit)
        red = run_case(n, K, "auto", a.limit)
        row = {"full": full, "reduced": red}
        if full["result"] == red["result"] == "solved":
            row["time_ratio"] = full["seconds"] / red["seconds"]
            row["rel_diff"] = abs(red["value"] - full["value"]) / abs(full["value"])
        res["ratio"].append(row)
        say(
            f"n={n} K={K}: full {full.get('seconds', float('nan')):.2f} s (Gram {full.get('gram')}, "
            f"{full['peak_rss_mb']:.0f} MB), reduced {red.get('seconds', float('nan')):.2f} s "
            f"(blocks {red.get('blocks')}, {red['peak_rss_mb']:.0f} MB, {red.get('symmetry')}); "
            f"full / reduced time {row.get('time_ratio', float('nan')):.1f}, "
            f"|reduced - full| / full = {row.get('rel_diff', float('nan')):.1e}"
        )
    say(f"\nPart 2: the reduced SDP at scale (limit {a.limit:.0f} s per case)")
    for n, K in a.cases:
        r = run_case(n, K, "auto", a.limit, a.feasibility, a.solver, a.options)
        res["scale"].append(r)
        say(
            f"n={n} K={K} {a.solver}: {r['result']}, solve {r.get('seconds', float('nan')):.1f} s "
            f"(cvxpy compile {r.get('compile_s', float('nan')):.1f} s, solver {r.get('solve_s', float('nan')):.1f} s, "
            f"{r.get('iters')} iterations), wall {r['wall_s']:.1f} s, "
            f"peak RSS {r['peak_rss_mb']:.0f} MB, blocks {r.get('blocks')}, constraints {r.get('constraints')}, "
            f"status {r.get('status')}, value {r.get('value', float('nan')):.9g}"
            + (
                f", SCS {r['scs_status']} res_pri {r['scs_res_pri']:.1e} res_dual {r['scs_res_dual']:.1e} "
                f"gap {r['scs_gap']:.1e}, PSD projections {r['scs_cone_time'] / 1000:.1f} s"
                + (
                    f"; check: passed {r['check']['passed']}, violation {r['check']['max_violation']:.1e}, "
                    f"lambda_min {r['check']['lambda_min']:.1e}, dual slack lambda_min "
                    f"{r['check']['dual_lambda_min']:.1e}, dual bound {r['check']['dual_bound']}"
                    if r.get("check")
                    else ""
                )
                if "scs_status" in r
                else ""
            )
            + (
                f", every node's constraints: max(lhs - rhs) = {r['max_violation']:.2e} (|G| max {r['scale']:.3g})"
                if "max_violation" in r
                else ""
            )
        )
    res["load_end"] = os.getloadavg()
    say(f"\nload average at end: {res['load_end']}")
    if a.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
