"""The engine's own cost per step at the suite's sizes, with a free gradient.

n = 16, d = 10, R = 8 replicas, metrics recorded every step, a problem whose
``grad`` returns a fixed array (so the step is all engine): CPU time per step,
best of 5, on the exponential graph without delays and on random peer with
tau = 2 random delays, on the numpy path and with the compiled step (when
numba is installed). Then the share of the delayed step's time in its main
functions (``cProfile``, cumulative).

    python benchmarks/engine_overhead.py      # about 30 s
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time
import warnings

import numpy as np

import sgpverify as sv
from sgpverify.engine import kernels

n, d, R, K = 16, 10, 8, 3000


class Free:
    """Fixed gradients (no arithmetic), elementwise metrics."""

    name = "Free"
    n_nodes, dim, L, sigma2, zeta2, f_lower = n, d, 1.0, 0.0, 0.0, 0.0
    batch_metrics = True
    G = np.random.default_rng(0).standard_normal((n, d)) * 0.01

    def grad(self, z, rng):
        return self.G

    def full_grad(self, x):
        return np.asarray(x) * 1.0

    def value(self, x):
        return np.sum(np.asarray(x) ** 2, axis=-1)


def per_step(topo, **kw):
    best = np.inf
    for _ in range(5):
        t0 = time.process_time()
        sv.simulate(Free(), topo, step_size=0.05, n_iter=K, replicas=R, seed=0, **kw)
        best = min(best, time.process_time() - t0)
    return best / K * 1e6


def main():
    warnings.simplefilter("ignore")
    cases = [
        ("exponential, tau 0", sv.graphs.exponential(n), {}),
        ("random peer, tau 2 random", sv.graphs.random_peer(n, seed=0), dict(tau=2, delay="random")),
    ]
    modes = ["numpy"] + (["numba"] if kernels.available() else [])
    print(f"us per step, n = {n}, d = {d}, R = {R}, free gradient, CPU time, best of 5:")
    for label, topo, kw in cases:
        row = []
        for mode in modes:
            os.environ["SGPVERIFY_KERNELS"] = mode
            row.append(f"{mode} {per_step(topo, **kw):6.1f}")
        print(f"   {label:<28} " + "   ".join(row))
    os.environ["SGPVERIFY_KERNELS"] = "numpy"
    topo = sv.graphs.random_peer(n, seed=0)
    prof = cProfile.Profile()
    prof.enable()
    sv.simulate(Free(), topo, step_size=0.05, n_iter=K, replicas=R, seed=0, tau=2, delay="random")
    prof.disable()
    st = pstats.Stats(prof)
    total = max(v[3] for v in st.stats.values())  # simulate's cumulative time
    print("random peer, tau 2: share of the step (cumulative, cProfile):")
    for key, v in sorted(st.stats.items(), key=lambda kv: -kv[1][3]):
        fn = f"{os.path.basename(key[0])}:{key[2]}"
        in_engine = os.path.basename(os.path.dirname(key[0])) == "engine"  # the package sgpverify/engine/
        if (in_engine or key[0].endswith(("mixing.py", "validation.py", "graphs.py"))) and key[2] != "simulate":
            print(f"   {fn:<30} {v[3] / total:6.1%}")
            if v[3] / total < 0.05:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
