"""Claims on rates as exponents: stationarity K^-1/2, consensus 1/K, linear speedup in n."""

from __future__ import annotations

import math

import numpy as np

from ... import rates
from ..criteria import RATE_CORRECTION, RATE_DELTA, RATE_OMEGA
from ..records import Claim, make_control
from .common import RATE_RULES, exponent_result

__all__ = [
    "STATIONARITY_RATE",
    "CONSENSUS_RATE",
    "LINEAR_SPEEDUP",
    "ITERATION_COMPLEXITY",
    "check_stationarity_rate",
    "check_consensus_rate",
    "check_linear_speedup",
    "check_complexity",
]


def _rate_check(cfg, data, key, predicted, xkey="K"):
    parts, verdicts, tests = [], [], {}
    for label, sch in data["rates"]["schedules"].items():
        runs = sch["runs"]
        x = [r["K"] for r in runs]
        Y = np.array([r[key] for r in runs]).T
        t = rates.test_exponent(
            x, Y, predicted=predicted, delta=RATE_DELTA, omega=RATE_OMEGA, correction=RATE_CORRECTION
        )
        tests[label] = t
        verdicts.append(t.verdict)
        w = (min(r["weight_min"] for r in runs), max(r["weight_max"] for r in runs))
        indef = [r.get("indefinite_fraction") for r in runs]
        parts.append(
            f"{label}: {t}; local slopes "
            + ", ".join(f"{s:.3f}" for s in t.local_slopes)
            + f"; weights in [{w[0]:.3g}, {w[1]:.3g}]"
            + (
                "; indefinite-Hessian fraction by K " + ", ".join(f"{v:.2f}" for v in indef)
                if all(v is not None for v in indef)
                else ""
            )
        )
    return exponent_result(tests, verdicts, parts, predicted)


def check_stationarity_rate(cfg, data):
    """(1/K) sum_k ||grad f(xbar^k)||^2 ~ K^(-1/2): extrapolated exponent per schedule."""
    return _rate_check(cfg, data, "stationarity", -0.5)


STATIONARITY_RATE = Claim(
    "stationarity-rate",
    "Theorem 1: (1/K) sum_k E||grad f(xbar^k)||^2 = O(1/sqrt(nK)) with gamma = sqrt(n/K)",
    ("rates",),
    "extrapolated exponent in K of the stationarity average (local slopes over doublings "
    "regressed on K^-1/2), t interval over replicas",
    f"pass iff the 95% interval lies in -1/2 +- {RATE_DELTA} on every schedule; fail iff outside (two-sided: "
    "with noise the rate is attained); inconclusive if the K^-1/2 correction model is rejected "
    "(p < 0.01) or the interval is wider than delta; " + RATE_RULES,
    make_control("constant-step", "gamma = sqrt(n/K_min) at every K instead of sqrt(n/K)", ("rates",), step="constant"),
    check_stationarity_rate,
)


def check_consensus_rate(cfg, data):
    """(1/K) sum_k Xi^k ~ K^(-1): extrapolated exponent per schedule."""
    return _rate_check(cfg, data, "consensus", -1.0)


CONSENSUS_RATE = Claim(
    "consensus-rate",
    "Theorem 1: (1/K) sum_k (1/n) sum_i E||xbar^k - z_i^k||^2 = O(1/K)",
    ("rates",),
    "extrapolated exponent in K of the consensus average",
    f"pass iff the 95% interval lies in -1 +- {RATE_DELTA} on every schedule; fail iff outside; "
    "inconclusive and fail also as for stationarity-rate",
    make_control(
        "no-debias",
        "push-sum without de-biasing (z = x) on a schedule whose weights move",
        ("rates",),
        debias=False,
    ),
    check_consensus_rate,
)


def check_linear_speedup(cfg, data):
    """Stationarity ~ n^(-1/2) at fixed K, as K -> oo: the slope in n at each K,
    extrapolated in K^(-1/2) to K -> oo (per replica; t interval over replicas)."""
    sp_ = data["speedup"]
    Ks, ns = sp_["Ks"], sp_["ns"]
    parts, verdicts, tests = [], [], {}
    for label, sch in sp_["schedules"].items():
        get = {(r["n"], r["K"]): r for r in sch["runs"]}
        slopes = []  # (R, len(Ks)) slope in n at each K
        for K in Ks:
            Y = np.log(np.array([get[n, K]["stationarity"] for n in ns]).T)  # (R, len(ns))
            u = np.log(np.asarray(ns, float))
            uc = u - u.mean()
            slopes.append((Y - Y.mean(axis=1, keepdims=True)) @ uc / float(uc @ uc))
        Sl = np.array(slopes).T  # (R, m)
        # the slope in n at K is p + b K^(-1/2) + ...: its limit as K -> oo is the speedup exponent
        t = rates.test_limit(
            np.asarray(Ks, float),
            Sl,
            predicted=-0.5,
            delta=RATE_DELTA,
            omega=RATE_OMEGA,
            correction=RATE_CORRECTION,
            decay=True,
        )
        tests[label] = t
        verdicts.append(t.verdict)
        parts.append(
            f"{label}: slope in n (n = {ns[0]}..{ns[-1]}) by K "
            + ", ".join(f"K={K}: {v:.3f}" for K, v in zip(Ks, Sl.mean(axis=0)))
            + f"; {t}"
        )
    return exponent_result(tests, verdicts, parts, -0.5)


LINEAR_SPEEDUP = Claim(
    "linear-speedup",
    "Theorem 1: the leading term (2 Delta + L sigma^2)/sqrt(nK) falls like n^-1/2 at fixed K (K large)",
    ("speedup",),
    "slope in n of the stationarity average at each K, extrapolated in K^-1/2 to K -> oo",
    f"pass iff the 95% interval of the extrapolated slope lies in -1/2 +- {RATE_DELTA} on every schedule; "
    "fail iff outside; inconclusive otherwise; " + RATE_RULES,
    make_control(
        "shared-noise",
        "gradient noise of the declared variance common to all nodes (workers seeded alike): "
        "averaging over nodes no longer reduces it",
        ("speedup",),
        shared_noise=True,
    ),
    check_linear_speedup,
)


def check_complexity(cfg, data):
    """Linear speedup as iteration complexity: the iterations K_n(eps) to reach a stationarity level
    eps fall like 1/n. Levels eps_j: the geometric mean over n of the replica-mean stationarity at
    budget T_j = n K; per replica, K_n(eps_j) by log-log interpolation along each n's ladder; the
    slope of log K_n(eps_j) in log n, extrapolated as T_j -> oo (K^-1/2 correction)."""
    cx = data["complexity"]
    ns, Ts = cx["ns"], cx["budgets"]
    get = {(r["n"], r["budget"]): np.log(np.asarray(r["stationarity"], float)) for r in cx["runs"]}
    R = len(next(iter(get.values())))
    levels = [float(np.mean([get[n, T].mean() for n in ns])) for T in Ts]
    u = np.log(np.asarray(ns, float))
    uc = u - u.mean()
    ladders = [(np.log(np.array([T // n for T in Ts], float)), np.array([get[n, T] for T in Ts]).T) for n in ns]
    E = np.empty((R, len(Ts)))
    for j, lev in enumerate(levels):
        LK = np.array([[rates.iterations_to(logK, Y[r], lev) for logK, Y in ladders] for r in range(R)])  # (R, len(ns))
        E[:, j] = (LK - LK.mean(axis=1, keepdims=True)) @ uc / float(uc @ uc)
    t = rates.test_limit(
        np.asarray(Ts, float),
        E,
        predicted=-1.0,
        delta=RATE_DELTA,
        omega=RATE_OMEGA,
        correction=RATE_CORRECTION,
        decay=True,
    )
    detail = (
        f"exponential graph, n = {', '.join(map(str, ns))}, budgets T = nK = {', '.join(map(str, Ts))}: levels "
        + ", ".join(f"{math.exp(v):.3g}" for v in levels)
        + "; slope of log K_n(eps) in log n by level "
        + ", ".join(f"{v:.3f}" for v in E.mean(0))
        + f"; limit {t}"
    )
    return dict(
        verdict=t.verdict,
        measured=f"{t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]",
        predicted=f"-1 +- {RATE_DELTA:g}",
        detail=detail,
        extra={
            "exponent": t.exponent,
            "interval": [t.ci_low, t.ci_high],
            "test": t.to_dict(),
            "levels": [math.exp(v) for v in levels],
        },
    )


ITERATION_COMPLEXITY = Claim(
    "iteration-complexity",
    "Linear speedup as iteration complexity: the iterations to reach a stationarity level fall like 1/n",
    ("complexity",),
    "slope in log n of log K_n(eps) (log-log interpolation along each n's ladder of budgets "
    "T = nK), at levels eps set by the budgets, extrapolated as T -> oo with a T^-1/2 term",
    f"pass iff the 95% interval of the limit lies in -1 +- {RATE_DELTA}; fail iff outside; inconclusive otherwise; "
    + RATE_RULES,
    make_control(
        "shared-noise",
        "gradient noise of the declared variance common to all nodes (workers seeded alike)",
        ("complexity",),
        shared_noise=True,
    ),
    check_complexity,
)
