"""How much of a rate's local slope is the schedule's own realization, on a random schedule.

The suite's replicas of a run share one realization of the schedule (one Erdos-Renyi graph sequence)
and differ in their gradient noise only; their t intervals measure the noise, not the schedule. This
script runs the consensus average (1/K) sum_k Xi^k of the finite-sum example (docs/examples/finitesum.py,
one data row of 64 per node and step) on Erdos-Renyi (n = 16, p = 0.3), gamma = sqrt(n/K), on several
realizations of the schedule (graph seeds), R replicas each, and prints, for each doubling of K:

- each realization's local slope (replica mean) and its standard error over the replicas;
- the spread of those slopes across realizations (sd), and its ratio to the typical standard error.

A ratio well above 1 means that, on one realization, the replicas' interval is too narrow for a claim
about the schedule family, and a correction model fitted to the replica means is rejected (the suite's
"the correction model does not fit" on consensus-rate); if the ratio does not fall with K, a longer
ladder does not remove it (both shrink like K^-1/2).

    .venv/bin/python benchmarks/schedule_realizations.py   # 3 graph seeds, K = 1024 ... 65536 (about 6 min)
    .venv/bin/python benchmarks/schedule_realizations.py --seeds 5 --replicas 8 --Ks 1024,2048,4096
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import warnings

import numpy as np

from sgpverify import simulate
from sgpverify.errors import EffectiveStepWarning
from sgpverify.graphs import by_name

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "examples"))
import finitesum  # noqa: E402

N, D = 16, 10


def slopes(seed: int, Ks: list[int], R: int) -> np.ndarray:
    """Local slopes of log2 of the consensus average over the doublings of ``Ks``: (R, len(Ks) - 1)."""
    prob = finitesum.make(N, D, 0)
    topo = by_name("erdos-renyi", N, seed=seed, p=0.3)
    logs = []
    for K in Ks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EffectiveStepWarning)
            tr = simulate(prob, topo, step_size=math.sqrt(N / K), n_iter=K, x0=np.ones(D), replicas=R, seed=7)
        cons = np.asarray(tr.consensus, float).reshape(K + 1, R).T[:, :K].mean(axis=1)
        logs.append(np.log2(cons))
    L = np.array(logs).T  # (R, m)
    return np.diff(L, axis=1) / np.diff(np.log2(Ks))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="realizations of the schedule (graph seeds 0..S-1)")
    ap.add_argument("--replicas", type=int, default=16, help="replicas (noise streams) per realization")
    ap.add_argument("--Ks", default="1024,2048,4096,8192,16384,32768,65536", help="the K ladder (doublings)")
    a = ap.parse_args(argv)
    Ks = [int(k) for k in a.Ks.split(",")]
    S = np.array([slopes(s, Ks, a.replicas) for s in range(a.seeds)])  # (seeds, R, m-1)
    means = S.mean(axis=1)  # (seeds, m-1)
    se = S.std(axis=1, ddof=1) / math.sqrt(a.replicas)
    print(f"consensus average, finite-sum example, Erdos-Renyi n = {N}, p = 0.3; {a.replicas} replicas a realization")
    print(f"{'doubling':>15}  " + "  ".join(f"seed {s}: slope (se)  " for s in range(a.seeds)) + "  sd across  sd / se")
    for j in range(len(Ks) - 1):
        cells = "  ".join(f"{means[s, j]:8.4f} ({se[s, j]:.4f})" for s in range(a.seeds))
        sd = float(means[:, j].std(ddof=1))
        print(f"{Ks[j]:>6}->{Ks[j + 1]:<7}  {cells}    {sd:.4f}     {sd / float(se[:, j].mean()):5.1f}")


if __name__ == "__main__":
    main()
