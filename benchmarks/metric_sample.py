"""Sampled metrics of a settling round against the full record, on a user's finite-sum problem.

A long run of a problem whose ``full_grad`` and ``value`` cost more than a step spends most of its
time evaluating them at every step. Settling rounds (``settle.ROUND_METRIC_SAMPLES``) evaluate them
at one step per block and replica (``runs.metric_sample``) and estimate the stationarity average from
those. For each K this prints, from one run with every step evaluated and one with the sample (the
same noise, the same iterates), the time of each and their ratio, the replicas' mean log stationarity
and the 95% half-width of each, and the per-replica difference of the two estimates.

Usage (from the repository root; docs/examples/finitesum.py is the default problem):

    python benchmarks/metric_sample.py [--problem finitesum:make] [--Ks 16384 32768 65536] [--replicas 32]
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "examples"))

from sgpverify import engine, graphs  # noqa: E402
from sgpverify.errors import EffectiveStepWarning  # noqa: E402
from sgpverify.suite.config import QUICK  # noqa: E402
from sgpverify.suite.runs import metric_sample, sampled_average  # noqa: E402
from sgpverify.suite.setting import resolve_problem  # noqa: E402
from sgpverify.suite.settle import ROUND_METRIC_SAMPLES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default="finitesum:make")
    ap.add_argument("--Ks", type=int, nargs="+", default=[16384, 32768, 65536])
    ap.add_argument("--replicas", type=int, default=32)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--samples", type=int, default=ROUND_METRIC_SAMPLES)
    a = ap.parse_args()
    n, R = a.nodes, a.replicas
    prob = resolve_problem(a.problem, QUICK)(n, 0)
    topo = graphs.erdos_renyi(n, 0.3, seed=0)
    q = stats.t.ppf(0.975, R - 1)
    print(f"{a.problem}, Erdos-Renyi n = {n}, p = 0.3, {R} replicas, {a.samples} samples per replica")
    print("K        full s  sampled s  ratio  log mean full  sampled  half-width full  sampled  diff mean  diff sd")
    warnings.simplefilter("ignore", EffectiveStepWarning)
    for K in a.Ks:
        args = dict(step_size=math.sqrt(n / K), n_iter=K, replicas=R, seed=1)
        t0 = time.perf_counter()
        full = engine.simulate(prob, topo, **args)
        t_full = time.perf_counter() - t0
        mask, steps, lengths = metric_sample(K, R, a.samples, 1)
        t0 = time.perf_counter()
        part = engine.simulate(prob, topo, metric_mask=mask, **args)
        t_part = time.perf_counter() - t0
        g_full = np.asarray(full.grad_norm_sq).reshape(K + 1, R).T
        g_part = np.asarray(part.grad_norm_sq).reshape(K + 1, R).T
        exact = np.log(g_full[:, :K].mean(axis=1))
        est = np.log(sampled_average(g_part, steps, lengths))
        hw = [q * v.std(ddof=1) / math.sqrt(R) for v in (exact, est)]
        d = est - exact
        print(
            f"{K:<8d} {t_full:6.1f}  {t_part:9.1f}  {t_full / t_part:5.2f}  {exact.mean():13.5f}  {est.mean():7.5f}"
            f"  {hw[0]:15.5f}  {hw[1]:7.5f}  {d.mean():9.2e}  {d.std(ddof=1):7.2e}"
        )


if __name__ == "__main__":
    main()
