#!/usr/bin/env python
"""How the time of ``sgpverify.check_mixing`` grows with n, and how it compares
with a dense-matrix approach.

Run from the repository root::

    .venv/bin/python benchmarks/bench_mixing.py            # plain-text tables
    .venv/bin/python benchmarks/bench_mixing.py --json     # one JSON object
    .venv/bin/python benchmarks/bench_mixing.py --max-n 4096 --horizon 100

What is measured (all in one process, one run, so the ratios are comparable):

1. Growth: ``check_mixing(exponential(n), horizon=H)`` for n = 64, 128, ...,
   --max-n, and ``check_mixing(random_peer(n, seed=0), horizon=H_rp)`` (a
   non-regular, aperiodic schedule; default H_rp = 50). Each row gives the
   time and the ratio t(n) / t(n/2): with one message per node per step the
   number of edges per step is n, so a ratio near 2 per doubling means the
   check is linear in the edges for a fixed horizon; near 4 means quadratic.
   A size whose predicted time (previous time x previous ratio, clipped to
   [2, 8]) exceeds --budget seconds is skipped with a note, so that the
   default run stays short. Every time is the best of 2-3 runs unless a run
   takes more than 5 s (one run then).
2. Dense reference (this file only): the core of the check, the contraction of
   the products ``P^(s+t:s)``, recomputed by forming every ``P^(k)`` as a dense
   n x n array and multiplying dense matrices (np.matmul). It computes the same
   quantity as ``sgpverify.assumptions.contraction``: for the same start steps
   s (those check_mixing uses with its default starts=4), the same tracked
   columns and the same stopping rule (a start stops once its deviation is
   below the round-off floor), ``dev[t] = max_s max_{i, j in cols}
   |[P^(s+t:s)]_ij - phi_i^(s+t)|`` with ``phi^(k) = P^(k:0) u``, u uniform.
   Timed against (a) the whole check_mixing and (b) sgpverify's own
   contraction() on the same inputs. Cross-check: the deviations of the s = 0
   start from both must agree within a tolerance scaled with eps (printed);
   a disagreement makes the script exit with status 1.
3. The issue's case: ``check_mixing(exponential(4096), horizon=200)``, and the
   command ``sgpverify mixing --topology exponential --nodes 4096 --horizon
   200`` end to end (a separate process: includes interpreter start and
   imports; skip with --no-cli).

check_mixing also computes the exact rate of periodic schedules
(circulant FFT, dense eigenvalues or ARPACK on the period's sparse steps), a
Lyapunov rate over ``lyapunov_steps`` = 2000 steps (one vector: a fixed cost
that dominates at small n, about 0.3-0.4 s for random_peer whose matrices are
rebuilt each step) and follows the deviations past the horizon until they
reach round-off; the "q" column is the validated envelope's q.

Absolute seconds depend on the machine and on its load; the ratios measured
in the same run are what matter. The dense products use the BLAS threads that
numpy is configured with (environment left as is); sgpverify's sparse
products are single-threaded.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np
import scipy

import sgpverify
from sgpverify import assumptions, graphs, mixing

EPS = float(np.finfo(float).eps)

HEADER = (
    "Ratios are what matter: absolute seconds depend on this machine and its load; "
    "every ratio below is measured within this one run."
)


# --------------------------------------------------------------------------- #
# timing helpers
# --------------------------------------------------------------------------- #


def timed(fn, min_time=0.5, max_reps=3, stable_time=5.0):
    """(best seconds, result) over up to ``max_reps`` runs of fn.

    A run shorter than ``min_time`` is repeated (best of up to max_reps); a run
    shorter than ``stable_time`` is repeated at least once: on a loaded machine
    multi-threaded BLAS/LAPACK calls can stall for seconds, and one stalled run
    would otherwise distort a ratio.
    """
    best, out = math.inf, None
    for rep in range(max_reps):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        if best >= min_time and (rep >= 1 or best >= stable_time):
            break
    return best, out


def powers_of_two(lo, hi):
    out, n = [], lo
    while n <= hi:
        out.append(n)
        n *= 2
    return out


def start_steps(horizon, starts=4):
    """The start steps s that check_mixing uses (starts spread over the first half)."""
    return sorted({int(s) for s in np.linspace(0, max(0, (horizon - 1) // 2), starts)})


def tracked_columns(N, count=256, seed=0):
    """All columns when N <= 512 (as check_mixing), else ``count`` seeded random ones."""
    if N <= 512:
        return np.arange(N)
    return np.sort(np.random.default_rng(seed).choice(N, count, replace=False))


# --------------------------------------------------------------------------- #
# the dense reference (kept here only, as the reference)
# --------------------------------------------------------------------------- #


def dense_push_matrix(topo, k):
    """Dense ``P^(k)``: node j keeps 1/(d_j + 1) and sends 1/(d_j + 1) on each out-edge."""
    n = topo.n
    e = np.asarray(topo.edges(k))
    deg = np.bincount(e[:, 0], minlength=n) if e.size else np.zeros(n, dtype=np.int64)
    share = 1.0 / (deg + 1.0)
    P = np.zeros((n, n))
    idx = np.arange(n)
    P[idx, idx] = share
    if e.size:
        P[e[:, 1], e[:, 0]] = share[e[:, 0]]  # edges are unique and without self-loops
    return P


def dense_contraction(topo, horizon, starts, cols, floor=assumptions.ROUND_OFF_FLOOR):
    """Deviation of the dense products ``P^(s+t:s)`` from ``phi 1^T``.

    Returns ``(dev, dev_s0, dev_allcols)``: ``dev`` as sgpverify's contraction
    (max over starts and tracked columns, on the product lengths reached),
    ``dev_s0`` the same for the start s = 0 alone, and ``dev_allcols`` as
    ``dev`` but over all n columns (which the dense products give for free;
    sgpverify samples 256 columns when n > 512).
    """
    n = topo.n
    period = topo.period
    cache = {}

    def P_of(k):
        if period is None:
            return dense_push_matrix(topo, k)
        key = k % period
        if key not in cache:
            cache[key] = dense_push_matrix(topo, k)
        return cache[key]

    phis = []
    v = np.full(n, 1.0 / n)
    for k in range(horizon):
        v = P_of(k) @ v
        phis.append(v)

    dev = np.zeros(horizon)
    reached = np.zeros(horizon, dtype=bool)
    dev_s0 = []
    dev_allcols = np.zeros(horizon)
    for s in starts:
        M = None
        for t in range(horizon - s):
            Pk = P_of(s + t)
            M = Pk.copy() if M is None else np.matmul(Pk, M)  # P^(s+t:s), dense n x n
            D = np.abs(M - phis[s + t][:, None])
            d = float(D[:, cols].max())
            dev_allcols[t] = max(dev_allcols[t], float(D.max()))
            dev[t] = max(dev[t], d)
            reached[t] = True
            if s == 0:
                dev_s0.append(d)
            if d < floor:
                break
    return dev[reached], np.asarray(dev_s0), dev_allcols[reached]


def crosscheck_tolerance(topo, horizon):
    """Absolute tolerance on deviations (entries are in [0, 1]): round-off of a
    product of t factors, each entry a sum of at most r terms, grows like t r eps."""
    r = 1
    for k in range(min(horizon, topo.period or horizon, 64)):
        e = topo.edges(k)
        if len(e):
            r = max(r, int(np.bincount(e[:, 1], minlength=topo.n).max()) + 1)
    return 64.0 * horizon * r * EPS


# --------------------------------------------------------------------------- #
# the benchmark parts
# --------------------------------------------------------------------------- #


def make_topology(kind, n):
    if kind == "exponential":
        return graphs.exponential(n)
    if kind == "exponential-peers2":
        return graphs.exponential(n, peers=2)
    if kind == "random_peer":
        return graphs.random_peer(n, seed=0)
    raise ValueError(kind)


def growth(kind, sizes, horizon, budget, min_time, emit):
    rows = []
    prev_t = prev_ratio = None
    for n in sizes:
        if prev_t is not None:
            predicted = prev_t * min(8.0, max(2.0, prev_ratio or 2.0))
            if predicted > budget:
                row = {"n": n, "skipped": f"predicted ~{predicted:.0f} s > --budget {budget:g} s"}
                rows.append(row)
                emit(row)
                continue
        topo = make_topology(kind, n)
        t, rep = timed(lambda: sgpverify.check_mixing(topo, horizon=horizon), min_time=min_time)
        ratio = t / prev_t if prev_t else None
        row = {
            "n": n,
            "edges_per_step": int(len(topo.edges(0))),
            "seconds": t,
            "ratio": ratio,
            "B": rep.B,
            "diameter": rep.diameter,
            "q": rep.q,
            "passed": rep.passed,
        }
        rows.append(row)
        emit(row)
        prev_t, prev_ratio = t, ratio
    return rows


def loglog_slope(rows, last=4):
    """Exponent alpha of t ~ n^alpha over the last few measured sizes."""
    pts = [(r["n"], r["seconds"]) for r in rows if "seconds" in r][-last:]
    if len(pts) < 2:
        return None
    x = np.log2([p[0] for p in pts])
    y = np.log2([max(p[1], 1e-9) for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def dense_compare(kind, n, horizon, min_time, check_seconds=None):
    topo = make_topology(kind, n)
    S = mixing.mixing_schedule(topo)
    starts = start_steps(horizon)
    cols = tracked_columns(n)
    if check_seconds is None:
        check_seconds, _ = timed(lambda: sgpverify.check_mixing(topo, horizon=horizon), min_time=min_time)
    core_t, dev_sgp = timed(
        lambda: assumptions.contraction(S.matrix, S.N, S.n, horizon, starts, cols), min_time=min_time
    )
    dense_t, (dev_d, dev_d0, dev_all) = timed(
        lambda: dense_contraction(topo, horizon, starts, cols), min_time=min_time, max_reps=2
    )
    dev_s0 = assumptions.contraction(S.matrix, S.N, S.n, horizon, [0], cols)
    tol = crosscheck_tolerance(topo, horizon)
    m = min(len(dev_s0), len(dev_d0))
    s0_max_sgp = float(dev_s0.max()) if dev_s0.size else 0.0
    s0_max_dense = float(dev_d0.max()) if dev_d0.size else 0.0
    s0_max_diff = abs(s0_max_sgp - s0_max_dense)
    s0_seq_diff = float(np.abs(dev_s0[:m] - dev_d0[:m]).max()) if m else 0.0
    k = min(len(dev_sgp), len(dev_d))
    all_seq_diff = float(np.abs(dev_sgp[:k] - dev_d[:k]).max()) if k else 0.0
    ok = (
        s0_max_diff <= tol
        and s0_seq_diff <= tol
        and all_seq_diff <= tol
        and len(dev_s0) == len(dev_d0)
        and len(dev_sgp) == len(dev_d)
    )
    return {
        "n": n,
        "horizon": horizon,
        "starts": starts,
        "columns": int(len(cols)),
        "products": int(len(dev_d)),  # product lengths reached (max over starts)
        "check_seconds": check_seconds,
        "core_seconds": core_t,
        "dense_seconds": dense_t,
        "dense_over_check": dense_t / check_seconds,
        "dense_over_core": dense_t / core_t,
        "s0_max_dev_sgpverify": s0_max_sgp,
        "s0_max_dev_dense": s0_max_dense,
        "s0_max_dev_diff": s0_max_diff,
        "s0_max_seq_diff": s0_seq_diff,
        "all_starts_max_seq_diff": all_seq_diff,
        "tolerance": tol,
        "lengths_match": len(dev_s0) == len(dev_d0) and len(dev_sgp) == len(dev_d),
        "agree": bool(ok),
        "last_length": int(len(dev_d) - 1),
        "tracked_dev_last": float(dev_d[-1]) if dev_d.size else 0.0,
        "allcols_dev_last": float(dev_all[-1]) if dev_all.size else 0.0,
    }


def run_cli(n, horizon):
    exe = os.path.join(os.path.dirname(sys.executable), "sgpverify")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "sgpverify.cli"]
    cmd += ["mixing", "--topology", "exponential", "--nodes", str(n), "--horizon", str(horizon)]
    shown = " ".join(["sgpverify"] + cmd[-7:])
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        return {"command": shown, "error": f"{type(exc).__name__}: {exc}"}
    dt = time.perf_counter() - t0
    out = {"command": shown, "seconds": dt, "exit_status": p.returncode}
    if p.returncode not in (0, 1):
        out["error"] = (p.stderr.strip().splitlines() or ["(no stderr)"])[-1]
    return out


def git_head():
    git = shutil.which("git")
    if not git:
        return None
    try:
        p = subprocess.run(
            [git, "--no-optional-locks", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        )
        return p.stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


# --------------------------------------------------------------------------- #
# output
# --------------------------------------------------------------------------- #


def _f(v, spec):
    if v is None:
        width = "".join(ch for ch in spec.split(".")[0] if ch.isdigit())
        return "-".rjust(int(width) if width else 1)
    return format(v, spec)


def growth_line(row):
    if "skipped" in row:
        return f"{row['n']:>7}  {'':>10}  skipped: {row['skipped']}"
    return (
        f"{row['n']:>7}  {row['edges_per_step']:>10}  {row['seconds']:>9.3f}  "
        f"{_f(row['ratio'], '>12.2f')}  {_f(row['B'], '>3')}  {_f(row['diameter'], '>4')}  "
        f"{_f(row['q'], '>7.4f')}  {'yes' if row['passed'] else 'NO'}"
    )


GROWTH_HEAD = (
    f"{'n':>7}  {'edges/step':>10}  {'seconds':>9}  {'t(n)/t(n/2)':>12}  {'B':>3}  {'diam':>4}  {'q':>7}  passed"
)


def dense_lines(r):
    head = (
        f"{'n':>6}  {'check s':>8}  {'core s':>8}  {'dense s':>8}  {'dense/check':>11}  "
        f"{'dense/core':>10}  {'s=0 max dev: sgpverify':>22}  {'dense':>20}  {'|diff|':>8}  "
        f"{'tol':>8}  agree"
    )
    line = (
        f"{r['n']:>6}  {r['check_seconds']:>8.3f}  {r['core_seconds']:>8.3f}  {r['dense_seconds']:>8.3f}  "
        f"{r['dense_over_check']:>11.1f}  {r['dense_over_core']:>10.1f}  "
        f"{r['s0_max_dev_sgpverify']:>22.17g}  {r['s0_max_dev_dense']:>20.17g}  "
        f"{r['s0_max_dev_diff']:>8.1e}  {r['tolerance']:>8.1e}  {'yes' if r['agree'] else 'NO'}"
    )
    return head, line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-n", type=int, default=64, help="smallest n (power of two, default 64)")
    ap.add_argument("--max-n", type=int, default=16384, help="largest n (default 16384)")
    ap.add_argument("--horizon", type=int, default=200, help="horizon of the exponential runs (default 200)")
    ap.add_argument(
        "--rp-horizon", type=int, default=50, help="horizon of the random_peer runs (default 50: that check is slower)"
    )
    ap.add_argument("--rp-max-n", type=int, default=None, help="largest n for random_peer (default --max-n)")
    ap.add_argument(
        "--dense-max-n",
        type=int,
        default=2048,
        help="largest n for the dense reference (default 2048; O(n^3) per product)",
    )
    ap.add_argument(
        "--budget",
        type=float,
        default=30.0,
        help="skip a size whose predicted time exceeds this many seconds (default 30)",
    )
    ap.add_argument(
        "--min-time",
        type=float,
        default=0.5,
        help="a measurement shorter than this is repeated, best of up to 3 "
        "(default 0.5 s); one under 5 s is always run at least twice",
    )
    ap.add_argument(
        "--extra-crosscheck-n",
        type=int,
        default=1000,
        help="n of the non-dyadic cross-check, exponential(n, peers=2) (default 1000; 0 skips)",
    )
    ap.add_argument("--case-n", type=int, default=4096, help="n of the issue's case (default 4096)")
    ap.add_argument("--no-cli", action="store_true", help="do not time the sgpverify command")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    a = ap.parse_args(argv)
    if a.min_n < 1 or a.max_n < a.min_n:
        ap.error(f"--min-n and --max-n must satisfy 1 <= min-n <= max-n, got {a.min_n}, {a.max_n}")

    t_start = time.perf_counter()
    text = not a.json

    def say(s=""):
        if text:
            print(s, flush=True)

    meta = {
        "sgpverify": sgpverify.__version__,
        "git_head": git_head(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "cpus": os.cpu_count(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        "loadavg_start": _loadavg(),
        "note": HEADER,
    }
    say("sgpverify check_mixing benchmark")
    say(HEADER)
    say(
        f"sgpverify {meta['sgpverify']} (git HEAD {meta['git_head']}, working tree may differ), "
        f"python {meta['python']}, numpy {meta['numpy']}, scipy {meta['scipy']}, {meta['cpus']} CPUs, "
        f"OPENBLAS_CORETYPE={meta['OPENBLAS_CORETYPE']!r}, OPENBLAS_NUM_THREADS={meta['OPENBLAS_NUM_THREADS']!r}, "
        f"load average at start {meta['loadavg_start']}"
    )

    sizes = powers_of_two(a.min_n, a.max_n)
    rp_sizes = powers_of_two(a.min_n, a.rp_max_n or a.max_n)
    result = {"meta": meta, "growth": {}, "dense": {}}

    # 1. growth
    for kind, sz, H in (("exponential", sizes, a.horizon), ("random_peer", rp_sizes, a.rp_horizon)):
        name = f"{kind}(n)" if kind == "exponential" else f"{kind}(n, seed=0)"
        say()
        say(f"[1] check_mixing({name}, horizon={H}): time vs n (about 2x per doubling = linear in edges)")
        say(GROWTH_HEAD)
        rows = growth(kind, sz, H, a.budget, a.min_time, lambda r: say(growth_line(r)))
        alpha = loglog_slope(rows)
        result["growth"][kind] = {"horizon": H, "rows": rows, "loglog_exponent_last4": alpha}
        say(f"  growth exponent over the last 4 sizes: t ~ n^{_f(alpha, '.2f')}")

    # 2. dense reference
    for kind, H in (("exponential", a.horizon), ("random_peer", a.rp_horizon)):
        grows = {r["n"]: r for r in result["growth"][kind]["rows"] if "seconds" in r}
        say()
        say(
            f"[2] dense reference vs sgpverify, {kind}, horizon={H}, starts={start_steps(H)}: "
            "'check' = whole check_mixing, 'core' = sgpverify's contraction() on the same"
        )
        say("    starts/columns, 'dense' = dense n x n products (np.matmul) with the same stopping rule")
        rows, prev = [], None
        head_done = False
        for n in sizes:
            if n > a.dense_max_n:
                say(f"  n={n}: skipped (n > --dense-max-n {a.dense_max_n}; dense products cost O(n^3) each)")
                rows.append({"n": n, "skipped": f"n > --dense-max-n {a.dense_max_n}"})
                continue
            if prev is not None and prev * 8 > a.budget:
                say(f"  n={n}: skipped (predicted ~{prev * 8:.0f} s > --budget {a.budget:g} s)")
                rows.append({"n": n, "skipped": f"predicted ~{prev * 8:.0f} s > --budget"})
                continue
            chk = grows.get(n, {}).get("seconds")
            r = dense_compare(kind, n, H, a.min_time, check_seconds=chk)
            rows.append(r)
            prev = r["dense_seconds"]
            head, line = dense_lines(r)
            if not head_done:
                say(head)
                head_done = True
            say(line)
        result["dense"][kind] = rows
        done = [r for r in rows if "agree" in r]
        if done:
            say(
                f"  cross-check (s=0 deviations, sgpverify vs dense): "
                f"{'all agree' if all(r['agree'] for r in done) else 'DISAGREE'}; "
                f"largest |diff| over every product length: "
                f"{max(r['s0_max_seq_diff'] for r in done):.1e} (s=0), "
                f"{max(r['all_starts_max_seq_diff'] for r in done):.1e} (all starts)"
            )
            big = [r for r in done if r["columns"] < r["n"]]
            if big:
                say(
                    "  sampled columns (n > 512), deviation at the last product length t, "
                    "256 tracked columns vs all n columns (dense): "
                    + ", ".join(
                        f"n={r['n']} t={r['last_length']}: {r['tracked_dev_last']:.3g} vs {r['allcols_dev_last']:.3g}"
                        for r in big
                    )
                )

    # 2b. the uniform shares above are 1/2 (one peer), so every product entry is
    # dyadic and both computations are exact: the tolerance is exercised only
    # with shares 1/3 (two peers) and an n that is not a power of 3.
    xn = min(a.extra_crosscheck_n, a.dense_max_n)
    if xn >= 2:
        r = dense_compare("exponential-peers2", xn, a.horizon, a.min_time)
        result["dense"]["exponential-peers2"] = [r]
        say()
        say(
            f"[2b] cross-check with non-dyadic shares (1/3): exponential({xn}, peers=2), horizon={a.horizon}: "
            f"s=0 max dev {r['s0_max_dev_sgpverify']:.17g} (sgpverify) vs {r['s0_max_dev_dense']:.17g} (dense);"
        )
        say(
            f"     largest |diff| over product lengths {r['s0_max_seq_diff']:.1e} (s=0), "
            f"{r['all_starts_max_seq_diff']:.1e} (all starts), tol {r['tolerance']:.1e}, "
            f"{r['products']} product lengths: {'agree' if r['agree'] else 'DISAGREE'}; "
            f"dense/core {r['dense_over_core']:.1f}"
        )

    # 3. the issue's case
    say()
    say(f"[3] the issue's case: check_mixing(exponential({a.case_n}), horizon={a.horizon})")
    topo = graphs.exponential(a.case_n)
    t0 = time.perf_counter()
    rep = sgpverify.check_mixing(topo, horizon=a.horizon)
    case_t = time.perf_counter() - t0
    best_t, _ = timed(
        lambda: sgpverify.check_mixing(graphs.exponential(a.case_n), horizon=a.horizon), min_time=math.inf, max_reps=2
    )
    best_t = min(best_t, case_t)
    case = {
        "n": a.case_n,
        "horizon": a.horizon,
        "seconds_first": case_t,
        "seconds_best_of_3": best_t,
        "passed": rep.passed,
        "B": rep.B,
        "diameter": rep.diameter,
        "q": rep.q,
    }
    say(
        f"  {case_t:.3f} s first run, {best_t:.3f} s best of 3 (each builds the topology and schedule); "
        f"B={rep.B}, diameter={rep.diameter}, q={_f(rep.q, '.4f')}, passed={rep.passed}"
    )
    if not a.no_cli:
        cli = run_cli(a.case_n, a.horizon)
        case["cli"] = cli
        if "error" in cli:
            say(f"  `{cli['command']}`: error: {cli['error']}")
        else:
            say(
                f"  `{cli['command']}`: {cli['seconds']:.3f} s end to end "
                f"(new process: interpreter start + imports + check), exit status {cli['exit_status']}"
            )
    result["case"] = case

    agree = all(r.get("agree", True) for rows in result["dense"].values() for r in rows)
    total = time.perf_counter() - t_start
    result["crosscheck_ok"] = agree
    result["total_seconds"] = total
    meta["loadavg_end"] = _loadavg()
    say()
    say(
        f"cross-check {'passed' if agree else 'FAILED'}; total benchmark time {total:.1f} s; "
        f"load average at end {meta['loadavg_end']} (other processes inflate and scatter the seconds)"
    )
    if a.json:
        print(json.dumps(result, default=_json_default))
    return 0 if agree else 1


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _json_default(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        v = float(v)
        return v if math.isfinite(v) else None
    if isinstance(v, np.bool_):
        return bool(v)
    raise TypeError(type(v).__name__)


if __name__ == "__main__":
    sys.exit(main())
