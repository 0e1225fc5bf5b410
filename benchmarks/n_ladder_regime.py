"""Which sizes n of a claim in n are inside the step-size regime on a random schedule, K by K.

The claims in n (``linear-speedup``, ``iteration-complexity``) run gamma = sqrt(n/K) at each n of their n
ladder. The push-sum weights of a random schedule do not depend on the gradients, so this script runs the
weights alone (w^{k+1} = P^k w^k, ``mixing.push_matrix``) for each n and applies the rate checks' regime rule
(constant_step_reach.py's ``outside``: ``suite.runs.step_regime_record`` and ``suite.criteria.REGIME_SHARE``,
gamma / w_min^k beyond 2/L at most at 1% of the steps, never two in a row) to the first K steps, for each K
of a ladder. Where only the smallest n are outside, settling moves the n ladder up instead of lengthening K
(docs/theory.md, "the n ladder moved up").

    .venv/bin/python benchmarks/n_ladder_regime.py                  # Erdos-Renyi p = 0.3, L = 0.5432, n = 4..64 (1 min)
    .venv/bin/python benchmarks/n_ladder_regime.py --L 2 --ns 4,8   # another declared L, other sizes
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from constant_step_reach import outside, weights  # the weights' run and the regime rule, from its neighbour

from sgpverify.graphs import by_name


def _ints(ap: argparse.ArgumentParser, name: str, text: str) -> list[int]:
    try:
        out = [int(s) for s in text.split(",")]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        ap.error(f"--{name} must be positive integers separated by commas, got {text!r}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="4,8,16,32,64", help="the sizes n (default 4,8,16,32,64)")
    ap.add_argument("--Ks", default="2048,8192,32768,131072", help="the K at which the rule is applied")
    ap.add_argument("--edge-prob", type=float, default=0.3)
    ap.add_argument("--L", type=float, default=0.5432, help="declared L (default: docs/examples/sinreg.py's shared)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ns, Ks = _ints(ap, "ns", a.ns), _ints(ap, "Ks", a.Ks)
    if min(ns) < 2 or not 0.0 < a.edge_prob <= 1.0 or not a.L > 0:
        ap.error(
            f"need --ns >= 2, --edge-prob in (0, 1] and --L > 0, got --ns {a.ns}, --edge-prob {a.edge_prob}, --L {a.L}"
        )
    print(f"# Erdos-Renyi p = {a.edge_prob}, seed {a.seed}; L = {a.L:.4g}, 2/L = {2 / a.L:.4g}; gamma = sqrt(n/K)")
    print("| n | smallest weight | " + " | ".join(f"K = {K}" for K in Ks) + " |")
    print("|---" * (len(Ks) + 2) + "|")
    t0 = time.perf_counter()
    for n in ns:
        topo = by_name("erdos-renyi", n, seed=a.seed, p=a.edge_prob)
        floor = weights(topo, n, max(Ks)).min(axis=1)
        cells = []
        for K in Ks:
            share, longest, out = outside(floor[:K], np.sqrt(n / K), a.L)
            cells.append(f"{'outside' if out else 'inside'} ({share:.2%}, {longest} in a row)")
        print(f"| {n} | {floor.min():.3g} | " + " | ".join(cells) + " |")
    print(f"# {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
