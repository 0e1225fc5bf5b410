"""Where a constant step sqrt(n/K_min) leaves the step-size regime on a random schedule, by its start K_min.

The constant-step control of ``stationarity-rate`` and ``delay-rate`` takes gamma = sqrt(n/K_min) at every K.
The push-sum weights of a random schedule do not depend on the gradients, so this script runs the weights
alone (w^{k+1} = P^k w^k, ``mixing.push_matrix``) and, for each start K_min, reports the first K of a
doubling ladder at which the rate checks' regime rule (``suite.criteria.REGIME_SHARE``: gamma / w_min^k beyond
2/L at most at 1% of the steps, never two in a row) no longer holds. The rule reads the floor w_min^k (the
smallest weight of step k); the script also counts the longest stretch of each node's own weight, since only a
node's own consecutive steps compound its amplification.

    .venv/bin/python benchmarks/constant_step_reach.py              # Erdos-Renyi n = 16, p = 0.3, K = 2^21 (5 min)
    .venv/bin/python benchmarks/constant_step_reach.py --K 262144   # a quicker look
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

from sgpverify.graphs import by_name
from sgpverify.mixing import push_matrix
from sgpverify.suite.criteria import REGIME_SHARE
from sgpverify.suite.runs import step_regime_record

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "examples"))
import tanhreg  # noqa: E402


def outside(floors: np.ndarray, gamma: float, L: float) -> tuple[float, int, bool]:
    """The regime record of a floor series (``runs.step_regime_record``, the rule's own): its share of steps
    beyond 2/L, its longest stretch, and whether the rate checks' rule puts the run outside the regime."""
    r = step_regime_record(floors[None, :], gamma, L)
    share, longest = r["steps_out_share"], r["steps_out_longest"]
    return share, longest, share > REGIME_SHARE or longest > 1


def weights(topo, n: int, K: int) -> np.ndarray:
    """(K, n): each node's push-sum weight after each of the first K steps of ``topo``, from w = 1."""
    w, W = np.ones(n), np.empty((K, n))
    for k in range(K):
        w = push_matrix(topo, k) @ w
        W[k] = w
    return W


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--edge-prob", type=float, default=0.3)
    ap.add_argument("--K", type=int, default=2**21, help="steps of the weights' run (default 2^21)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--starts", default="8192,16384,32768,65536,131072", help="the K_min to try")
    a = ap.parse_args()
    try:
        starts = [int(s) for s in a.starts.split(",")]
    except ValueError:
        ap.error(f"--starts must be positive integers separated by commas, got {a.starts!r}")
    if a.K < 1 or a.nodes < 2 or not 0.0 < a.edge_prob <= 1.0 or min(starts) < 1:
        ap.error(
            f"need --K >= 1, --nodes >= 2, --edge-prob in (0, 1] and --starts >= 1, got --K {a.K}, "
            f"--nodes {a.nodes}, --edge-prob {a.edge_prob}, --starts {a.starts}"
        )
    n = a.nodes
    L = tanhreg.make(n, 10, 0).L  # the declared L of docs/examples/tanhreg.py at this n (d = 10, seed 0)
    topo = by_name("erdos-renyi", n, seed=a.seed, p=a.edge_prob)
    t0 = time.perf_counter()
    W = weights(topo, n, a.K)
    floor = W.min(axis=1)
    print(
        f"# Erdos-Renyi n = {n}, p = {a.edge_prob}, seed {a.seed}: {a.K} steps of the weights in "
        f"{time.perf_counter() - t0:.0f} s; L = {L:.4g} (tanhreg's declared), 2/L = {2 / L:.4g}"
    )
    quantiles = np.quantile(floor, [1e-4, 1e-3, 1e-2])
    print("# floor quantiles 1e-4, 1e-3, 1e-2: " + ", ".join(f"{q:.4g}" for q in quantiles))
    print("| K_min | gamma | share beyond 2/L (whole run) | longest stretch: floor / a node's own | regime left at K |")
    print("|---|---|---|---|---|")
    ladder = [2**j for j in range(1, 64) if 2**j <= a.K]
    for K_min in starts:
        gamma = np.sqrt(n / K_min)
        share, longest, _ = outside(floor, gamma, L)
        own = max(outside(W[:, i], gamma, L)[1] for i in range(n))
        left = next((K for K in ladder if K >= K_min and outside(floor[:K], gamma, L)[2]), None)
        print(
            f"| {K_min} | {gamma:.4g} | {share:.3%} | {longest} / {own} | "
            f"{left if left is not None else f'not within {a.K}'} |"
        )


if __name__ == "__main__":
    main()
