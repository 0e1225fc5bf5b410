"""A settling round's constant-step ladder as one run against the runs one at a time.

The constant-step control (``gamma = sqrt(n/K_min)`` at every K) of ``stationarity-rate`` and
``delay-rate`` makes runs that differ only in their length, so in a settling round
(``runs.prefix_ladder``) the suite runs the ladder's longest K and summarises its prefixes
(``runs.run_ladder``). This times both on a user's finite-sum problem, in one process, on a round's
configuration (its noise stream, its sampled metrics), and prints the ratio, the steps each ran and
the largest relative difference of the stationarity averages between the two (the same numbers
summed: round-off).

Usage (from the repository root; docs/examples/tanhreg.py is the default problem):

    python benchmarks/prefix_ladder.py [--problem tanhreg:make] [--Ks 8192 16384 32768 65536] [--replicas 32]
"""

import argparse
import dataclasses
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "examples"))

from sgpverify import graphs  # noqa: E402
from sgpverify.suite.claims import BY_NAME  # noqa: E402
from sgpverify.suite.config import QUICK  # noqa: E402
from sgpverify.suite.runs import prefix_ladder, run_ladder, run_one  # noqa: E402
from sgpverify.suite.setting import resolve_problem  # noqa: E402
from sgpverify.suite.settle import ROUND_METRIC_SAMPLES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default="tanhreg:make")
    ap.add_argument("--Ks", type=int, nargs="+", default=[8192, 16384, 32768, 65536])
    ap.add_argument("--replicas", type=int, default=32)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--tau", type=int, default=0, help="a delay (random) as in the delay-rate control's runs")
    a = ap.parse_args()
    variant = BY_NAME["stationarity-rate"].control.variant
    cfg = dataclasses.replace(
        QUICK, n=a.nodes, Ks=tuple(a.Ks), problem=a.problem, noise_stream=1, metric_samples=ROUND_METRIC_SAMPLES
    )
    assert prefix_ladder(cfg, variant)
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, 0)
    topo = graphs.erdos_renyi(cfg.n, 0.3, seed=0)
    kw = dict(replicas=a.replicas, regime=True, tau=a.tau, delay="random")
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    one = run_ladder(cfg, prob, topo, cfg.Ks, 0, variant, **kw)
    t1 = time.perf_counter()
    each = [run_one(cfg, prob, topo, K, 0, variant, **kw) for K in cfg.Ks]
    t2 = time.perf_counter()
    rel = max(
        float(np.max(np.abs(np.asarray(x["stationarity"]) / np.asarray(y["stationarity"]) - 1.0)))
        for x, y in zip(one, each)
    )
    print(
        f"{a.problem}, Erdos-Renyi n = {a.nodes}, p = 0.3, tau = {a.tau}, {a.replicas} replicas, "
        f"Ks {list(cfg.Ks)}, {ROUND_METRIC_SAMPLES} samples per replica"
    )
    print(f"one run (prefixes): {t1 - t0:8.1f} s, {max(cfg.Ks)} steps")
    print(f"one run per K:      {t2 - t1:8.1f} s, {sum(cfg.Ks)} steps")
    print(f"ratio {(t2 - t1) / (t1 - t0):.2f}; largest relative difference of the stationarity averages {rel:.1e}")


if __name__ == "__main__":
    main()
