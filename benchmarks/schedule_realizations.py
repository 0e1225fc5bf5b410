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

Then, per realization, the suite's exponent test on its replicas (``sgpverify.rates.test_exponent``,
predicted -1 +- 0.05, the consensus claim's correction K^-1/2) and, as a candidate remedy, the same
extrapolated exponent with its interval widened by the Birge ratio ``sqrt(chi^2 / dof)`` of the
correction model's fit to the replica means (the Particle Data Group's scale factor for inconsistent
data): whether that widened interval lies in the band, and whether it covers the mean over the
realizations (the schedule family's exponent, as far as these realizations show it).

The suite can since (2026-12-05) run each replica of its rate runs on its own realization of a
random schedule (``own_realisations = true``; ``sgpverify.suite.setting.realisations``). ``--own S``
runs the suite's rate experiment so (``sgpverify.suite.experiments.exp_rates``: the quick ladder
K = 256 ... 4096, 32 replicas, each on its own realization) at the suite seeds 0 .. S-1, and prints
the suite's exponent test of the consensus average at each: whether the correction model fits, and
the verdict. ``--cost`` times one engine call of 32 replicas against 32 calls of one replica
(``--seeds 0`` skips the study above).

    .venv/bin/python benchmarks/schedule_realizations.py   # 3 graph seeds, K = 1024 ... 65536 (about 6 min)
    .venv/bin/python benchmarks/schedule_realizations.py --seeds 5 --replicas 8 --Ks 1024,2048,4096
    .venv/bin/python benchmarks/schedule_realizations.py --seeds 0 --own 8   # own realizations (about 8 min)
    .venv/bin/python benchmarks/schedule_realizations.py --seeds 0 --cost    # their price (about 1.5 min)
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
from sgpverify.rates import test_exponent

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "examples"))
import finitesum  # noqa: E402

N, D = 16, 10


def averages(seed: int, Ks: list[int], R: int) -> np.ndarray:
    """The consensus average at each K of ``Ks`` per replica: (R, len(Ks))."""
    prob = finitesum.make(N, D, 0)
    topo = by_name("erdos-renyi", N, seed=seed, p=0.3)
    logs = []
    for K in Ks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EffectiveStepWarning)
            tr = simulate(prob, topo, step_size=math.sqrt(N / K), n_iter=K, x0=np.ones(D), replicas=R, seed=7)
        cons = np.asarray(tr.consensus, float).reshape(K + 1, R).T[:, :K].mean(axis=1)
        logs.append(cons)
    return np.array(logs).T  # (R, m)


def birge(Ks: list[int], S: np.ndarray) -> tuple[float, float, float, float]:
    """``(p, lo, hi, ratio)``: the extrapolated exponent of the replica means of the local slopes ``S``
    (R, m - 1) over the doublings of ``Ks``, regressed on K_mid^-1/2 by weighted least squares (weights
    1/se^2), with its 95% interval widened by the Birge ratio ``max(1, sqrt(chi^2 / dof))``."""
    lK = np.log(np.asarray(Ks, float))
    xm = np.exp(0.5 * (lK[1:] + lK[:-1]))
    s, se = S.mean(axis=0), S.std(axis=0, ddof=1) / math.sqrt(len(S))
    A = np.column_stack([np.ones_like(xm), xm**-0.5]) / se[:, None]
    coef, *_ = np.linalg.lstsq(A, s / se, rcond=None)
    cov = np.linalg.inv(A.T @ A)
    dof = len(s) - 2
    chi2 = float(np.sum((A @ coef - s / se) ** 2))
    ratio = max(1.0, math.sqrt(chi2 / dof)) if dof > 0 else 1.0
    half = 1.96 * math.sqrt(cov[0, 0]) * ratio
    return float(coef[0]), float(coef[0] - half), float(coef[0] + half), ratio


def own(seeds: int) -> None:
    """The suite's rate experiment with own realizations (each replica on its own realization) at suite
    seeds 0 .. seeds-1, and the suite's exponent test of its consensus average at each."""
    from sgpverify import suite
    from sgpverify.suite.claims.common import exponent_test
    from sgpverify.suite.experiments import exp_rates

    cfg = suite.config_from_dict(
        {
            "n": N,
            "d": D,
            "problem": "finitesum:make",
            "topologies": ["erdos-renyi"],
            "edge_prob": 0.3,
            "own_realisations": True,
        }
    )
    print(f"\nthe suite's rate runs, own realizations (Ks = {list(cfg.Ks)}, {cfg.rate_replicas} replicas)")
    for seed in range(seeds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EffectiveStepWarning)
            sch = exp_rates(cfg, seed)["schedules"]["erdos-renyi"]
        Y = np.array([r["consensus"] for r in sch["runs"]]).T
        t = exponent_test([r["K"] for r in sch["runs"]], Y, predicted=-1.0)
        slopes = ", ".join(f"{v:.3f}" for v in t.local_slopes)
        gof = "-" if t.gof_pvalue is None else f"{t.gof_pvalue:.2g}"
        print(
            f"seed {seed}: {sch.get('realisations', 1)} realizations; {t.verdict} ({t.rule}) {t.exponent:.4f} "
            f"[{t.ci_low:.4f}, {t.ci_high:.4f}], model fit p = {gof}; local slopes {slopes}",
            flush=True,
        )


def cost(K: int = 4096, R: int = 32) -> None:
    """Seconds of one engine call with R replicas on one realization against R calls of one replica on
    R realizations (what the suite's rate runs now do on a random schedule), at K, for the finite-sum
    example and the guide's ``mymod``."""
    import time

    import mymod

    print(f"\nrate runs at K = {K}: one call of {R} replicas against {R} calls of one replica (one core)")
    for name, prob in (("finitesum", finitesum.make(N, D, 0)), ("mymod", mymod.make(N, D, 0))):
        secs = []
        for reps, calls in ((R, 1), (1, R)):
            t0 = time.perf_counter()
            for s in range(calls):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", EffectiveStepWarning)
                    simulate(
                        prob,
                        by_name("erdos-renyi", N, seed=s, p=0.3),
                        step_size=math.sqrt(N / K),
                        n_iter=K,
                        x0=np.ones(D),
                        replicas=reps,
                        seed=s,
                        record_every=1,
                    )
            secs.append(time.perf_counter() - t0)
        print(f"{name}: {secs[0]:.1f} s against {secs[1]:.1f} s ({secs[1] / secs[0]:.1f}x)", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="realizations of the schedule (graph seeds 0..S-1)")
    ap.add_argument("--replicas", type=int, default=16, help="replicas (noise streams) per realization")
    ap.add_argument("--Ks", default="1024,2048,4096,8192,16384,32768,65536", help="the K ladder (doublings)")
    ap.add_argument("--own", type=int, default=0, help="suite seeds of the suite's rate runs as they are now")
    ap.add_argument("--cost", action="store_true", help="time one call of R replicas against R calls of one")
    a = ap.parse_args(argv)
    if a.cost:
        cost()
    if a.seeds < 1:
        if a.own:
            own(a.own)
        return
    Ks = [int(k) for k in a.Ks.split(",")]
    Ys = [averages(s, Ks, a.replicas) for s in range(a.seeds)]  # (R, m) each
    S = np.array([np.diff(np.log2(Y), axis=1) / np.diff(np.log2(Ks)) for Y in Ys])  # (seeds, R, m-1)
    means = S.mean(axis=1)  # (seeds, m-1)
    se = S.std(axis=1, ddof=1) / math.sqrt(a.replicas)
    print(f"consensus average, finite-sum example, Erdos-Renyi n = {N}, p = 0.3; {a.replicas} replicas a realization")
    print(f"{'doubling':>15}  " + "  ".join(f"seed {s}: slope (se)  " for s in range(a.seeds)) + "  sd across  sd / se")
    for j in range(len(Ks) - 1):
        cells = "  ".join(f"{means[s, j]:8.4f} ({se[s, j]:.4f})" for s in range(a.seeds))
        sd = float(means[:, j].std(ddof=1))
        print(f"{Ks[j]:>6}->{Ks[j + 1]:<7}  {cells}    {sd:.4f}     {sd / float(se[:, j].mean()):5.1f}")
    fits = [birge(Ks, slopes) for slopes in S]
    family = float(np.mean([f[0] for f in fits]))
    print(f"\nper realization: the suite's test (-1 +- 0.05) and the Birge-widened interval; mean {family:.4f}")
    for s, (Y, (p, lo, hi, ratio)) in enumerate(zip(Ys, fits)):
        t = test_exponent(np.asarray(Ks, float), Y, predicted=-1.0)
        inside = "in the band" if -1.05 <= lo and hi <= -0.95 else "not in the band"
        covers = "covers" if lo <= family <= hi else "misses"
        print(
            f"seed {s}: {t.verdict} ({t.rule}) {t.exponent:.4f} [{t.ci_low:.4f}, {t.ci_high:.4f}]; "
            f"Birge ratio {ratio:.1f}: {p:.4f} [{lo:.4f}, {hi:.4f}], {inside}, {covers} the mean"
        )
    if a.own:
        own(a.own)


if __name__ == "__main__":
    main()
