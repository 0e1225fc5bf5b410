"""How a run's push-sum weight floor meets the step-size regime of the rate claims, as K grows.

For each case and K (gamma = sqrt(n/K), as the suite's ladders), it prints the share of steps whose
weight floor w_min^k takes the effective step gamma / w_min^k beyond 2/L, the longest stretch of such
steps in a row, the largest gamma L / w_min^k, and the stationarity average (1/K) sum ||grad f(xbar^k)||^2:

- ``er``: the guide's own problem (docs/examples/mymod.py) on Erdos-Renyi (n = 16, p = 0.3): isolated
  steps beyond 2/L, a share that falls with K, and a stationarity average that decays regularly;
- ``rp2``: the default problem on random peer with random delays tau = 2 (n = 16): the weights drain,
  a large share of steps beyond 2/L in stretches, and the stationarity average is that of an unstable run.

    .venv/bin/python benchmarks/step_regime.py            # both cases, K = 256 ... 16384 (about 30 s)
    .venv/bin/python benchmarks/step_regime.py --Ks 256,1024,4096,16384,65536
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import warnings

import numpy as np

from sgpverify import problems, simulate
from sgpverify.errors import EffectiveStepWarning
from sgpverify.graphs import by_name
from sgpverify.suite.criteria import REGIME_SHARE
from sgpverify.suite.runs import step_regime_record

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "examples"))
import mymod  # noqa: E402

N, R = 16, 4


def case(name):
    if name == "er":
        return mymod.make(N, 10, 0), by_name("erdos-renyi", N, seed=0, p=0.3), {}
    return problems.QuadraticCosine(N, 10, seed=0), by_name("random-peer", N, seed=0), dict(tau=2, delay="random")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--Ks", default="256,1024,4096,16384")
    args = ap.parse_args()
    warnings.simplefilter("ignore", EffectiveStepWarning)
    print(f"the regime allows {REGIME_SHARE:.0%} of the steps beyond 2/L, one at a time")
    print(f"{'case':5} {'K':>6} {'share':>9} {'in a row':>8} {'max gL/w':>9} {'stationarity':>13}")
    for name in ("er", "rp2"):
        prob, topo, kw = case(name)
        L = float(prob.L)
        for K in (int(k) for k in args.Ks.split(",")):
            gamma = float(np.sqrt(N / K))
            tr = simulate(prob, topo, step_size=gamma, n_iter=K, replicas=R, seed=0, record_every=1, **kw)
            floors = np.asarray(tr.weight_min, float).reshape(K + 1, R).T[:, :K]
            rec = step_regime_record(floors, gamma, L)
            stat = float(np.asarray(tr.grad_norm_sq, float).reshape(K + 1, R)[:K].mean())
            print(
                f"{name:5} {K:>6} {rec['steps_out_share']:>9.2e} {rec['steps_out_longest']:>8} "
                f"{gamma * L / floors.min():>9.3g} {stat:>13.3g}",
                flush=True,
            )


if __name__ == "__main__":
    main()
