"""Claims on rates as exponents: stationarity K^-1/2, consensus 1/K, linear speedup in n."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import rates
from ..criteria import RATE_CORRECTION, RATE_DELTA
from ..records import Claim, make_control
from .bounds import consensus_bound_ratio
from .common import (
    FASTER_RULE,
    RATE_RULES,
    expo,
    exponent_result,
    exponent_test,
    faster_than_the_bound,
    inconclusive_because,
    leading_regime,
    limit_test,
    log_ratio,
    outside_step_regime,
    regime_by_n,
    undetermined,
    unless_faster,
    unless_pre_asymptotic_in_n,
)

if TYPE_CHECKING:
    from ..config import SuiteConfig

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


#: Relative spread across n above which a constant counts as changing with n (round-off aside).
N_CHANGE_RTOL = 1e-6


def leading_constants(entry: dict[str, Any], runs: list[dict[str, Any]]) -> tuple[dict[int, float] | None, str]:
    """Theorem 1's leading constant ``C_n = f(xbar^0) - f* + L sigma^2 / 2`` of the problem at each n.

    A claim in n (linear speedup, iteration complexity) is about the algorithm on a fixed problem: where
    the user's problem changes with n (f*, Delta, L or sigma^2 differ across n), the stationarity at n is
    divided by C_n, which removes the bound's n-dependent factor. Returns ``(C by n, note)``; ``(None,
    reason)`` where the problem changes with n and C_n cannot be formed (f* unknown, or C_n not a
    finite positive number): the check is then inconclusive, saying why. Without recorded constants
    (older data) every C_n is 1.
    """
    consts = entry.get("constants_by_n")
    if not consts:
        return {int(r["n"]): 1.0 for r in runs}, "not normalised (no constants recorded)"
    f0 = {}
    for r in runs:
        f0.setdefault(int(r["n"]), float(np.mean(r["f0"])))
    ns = sorted(f0)
    c = {n: consts[str(n)] for n in ns}

    def spread(values):
        v = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(v)):
            return math.inf
        scale = np.max(np.abs(v))
        return float((v.max() - v.min()) / scale) if scale > 0 else 0.0

    if any(c[n].get("f_star") is None for n in ns):
        gaps = [f0[n] - c[n]["f_lower"] for n in ns]
        moving = {
            "f(xbar^0) - f_lower": spread(gaps),
            "L": spread([c[n]["L"] for n in ns]),
            "sigma^2": spread([c[n]["sigma2"] for n in ns]),
        }
        moved = [k for k, v in moving.items() if v > N_CHANGE_RTOL]
        if moved:
            return None, (
                f"the problem changes with n ({', '.join(moved)} differ across n = {ns[0]}..{ns[-1]}) and f* is "
                "unknown: the leading constant f(xbar^0) - f* + L sigma^2/2 cannot be normalised away"
            )
        return {n: 1.0 for n in ns}, "the problem's constants do not change with n"
    C = {n: f0[n] - c[n]["f_star"] + c[n]["L"] * c[n]["sigma2"] / 2 for n in ns}
    if not all(math.isfinite(v) and v > 0 for v in C.values()):
        return None, "the leading constant f(xbar^0) - f* + L sigma^2/2 is not a finite positive number at every n"
    lo, hi = min(C.values()), max(C.values())
    return C, f"normalised by the leading constant f(xbar^0) - f* + L sigma^2/2 = {lo:.4g}..{hi:.4g} across n"


#: What problem shape makes a claim in n apply, said where it does not.
N_SHAPE = (
    "the claim in n applies to a problem whose f_i do not change with n (every n's nodes drawn from one fixed "
    "distribution, with the same f* and constants at every n), or to one that declares f_star at every n (each "
    "n's stationarity is then normalised by its leading constant)"
)


def not_applicable_in_n(note: str, predicted: float) -> dict[str, Any]:
    """The verdict of a claim in n on a problem that changes with n where the leading constant cannot
    be normalised away (``note`` says why): no amount of compute settles it, so it does not apply."""
    return dict(
        verdict="not applicable",
        measured="not applicable: the problem changes with n",
        predicted=f"{predicted:g} +- {RATE_DELTA:g}",
        detail=f"{note}; {N_SHAPE}",
    )


def _unless_below_bound(t, ratios, K_last):
    """A consensus-rate failure on the slow side (the last local slope above the band), by any rule
    but decay, where every run's consensus stays below its bound (b2): inconclusive, rule
    ``"below-bound"``. (b2) gives the rate K^-1 through E Xi^k <= (gamma S2 G2 / delta)^2 with gamma =
    sqrt(n/K); a consensus far below that bound can decay slower over the measured range, and
    contradicts the analysis only where it would meet the bound: at about K_last r^(-1/(s+1)) for
    the last ratio r and local slope s, which the reason gives."""
    if t.verdict != "fail" or t.rule == "decay" or not t.local_slopes:
        return t
    s = t.local_slopes[-1]
    if s <= t.predicted + t.delta or not ratios or any(r is None or not r < 1 for r in ratios):
        return t
    r = ratios[-1]
    meet = K_last * r ** (-1.0 / (s + 1.0)) if s > -1.0 and r > 0 else math.inf
    return inconclusive_because(
        t,
        "below-bound",
        f"the consensus stays below its bound (b2) in every run (max_k E Xi^k / bound <= {max(ratios):.3g}), "
        f"which implies the rate K^-1 only where the two meet: at the last local slope {s:.3f} and ratio "
        f"{r:.3g} that is K ~ {meet:.3g}; a ladder to there would settle it",
    )


def _rate_check(cfg, data, key, predicted, xkey="K"):
    parts, verdicts, tests = [], [], {}
    L = data["rates"].get("constants", {}).get("L")
    for label, sch in data["rates"]["schedules"].items():
        runs = sch["runs"]
        x = [r["K"] for r in runs]
        Y = np.array([r[key] for r in runs]).T
        why = outside_step_regime(runs, lambda r: L)
        if why is not None:
            tests[label] = undetermined(predicted, why)
            verdicts.append("inconclusive")
            parts.append(f"{label}: {why}")
            continue
        t = unless_faster(exponent_test(x, Y, predicted=predicted, what=f"{label} {key}"))
        if key == "consensus":
            t = _unless_below_bound(t, [consensus_bound_ratio(data, label, r) for r in runs], x[-1])
            t = faster_than_the_bound(t)  # O(1/K) is an upper bound: clearly faster is consistent
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


def check_stationarity_rate(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """(1/K) sum_k ||grad f(xbar^k)||^2 ~ K^(-1/2): extrapolated exponent per schedule."""
    return _rate_check(cfg, data, "stationarity", -0.5)


STATIONARITY_RATE = Claim(
    "stationarity-rate",
    "Theorem 1: (1/K) sum_k E||grad f(xbar^k)||^2 = O(1/sqrt(nK)) with gamma = sqrt(n/K)",
    ("rates",),
    "extrapolated exponent in K of the stationarity average (local slopes over doublings "
    "regressed on K^-1/2), t interval over replicas (with own_realisations, on a random schedule each on its "
    "own realisation)",
    f"pass iff the 95% interval lies in -1/2 +- {RATE_DELTA} on every schedule; fail iff above (a slower decay); "
    + FASTER_RULE
    + "; inconclusive if the K^-1/2 correction model is rejected "
    "(p < 0.01) or the interval is wider than delta; " + RATE_RULES,
    make_control("constant-step", "gamma = sqrt(n/K_min) at every K instead of sqrt(n/K)", ("rates",), step="constant"),
    check_stationarity_rate,
    uses=("bias",),
)


def check_consensus_rate(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """(1/K) sum_k Xi^k ~ K^(-1): extrapolated exponent per schedule."""
    return _rate_check(cfg, data, "consensus", -1.0)


CONSENSUS_RATE = Claim(
    "consensus-rate",
    "Theorem 1: (1/K) sum_k (1/n) sum_i E||xbar^k - z_i^k||^2 = O(1/K)",
    ("rates", "mixing"),
    "extrapolated exponent in K of the consensus average, t interval over replicas (with own_realisations, on a "
    "random schedule each on its own realisation)",
    f"pass iff the 95% interval lies in -1 +- {RATE_DELTA} on every schedule; fail iff outside; a failure on "
    "the slow side (by any rule but decay) is inconclusive where every run's consensus stays below its bound "
    "(b2), which implies the rate only where the two meet; a decay clearly faster (the extrapolated "
    "exponent, its whole 95% interval and the last local slope below the band) passes, marked 'faster than "
    "the bound's rate', and one whose whole interval lies below the band while its last local slope lies in "
    "it passes marked 'at the bound's rate or faster': O(1/K) bounds the rate from above; "
    "inconclusive and fail also as for stationarity-rate",
    make_control(
        "no-debias",
        "push-sum without de-biasing (z = x) on a schedule whose weights move",
        ("rates",),
        debias=False,
    ),
    check_consensus_rate,
)


def check_linear_speedup(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Stationarity ~ n^(-1/2) at fixed K, as K -> oo: the slope in n at each K,
    extrapolated in K^(-1/2) to K -> oo (per replica; t interval over replicas)."""
    sp_ = data["speedup"]
    Ks, ns = sp_["Ks"], sp_["ns"]
    if len(ns) < 2:
        return dict(
            verdict="inconclusive",
            measured=f"{len(ns)} size n",
            predicted=f"-0.5 +- {RATE_DELTA:g}",
            detail="a slope in n needs at least 2 sizes n",
        )
    parts, verdicts, tests = [], [], {}
    for sch in sp_["schedules"].values():
        Cn, note = leading_constants(sp_, sch["runs"])
        if Cn is None and "changes with n" in note:
            return not_applicable_in_n(note, -0.5)
    for label, sch in sp_["schedules"].items():
        get = {(r["n"], r["K"]): r for r in sch["runs"]}
        Cn, note = leading_constants(sp_, sch["runs"])
        L_of = lambda r: sp_.get("constants_by_n", {}).get(str(r["n"]), {}).get("L")  # noqa: E731
        why = outside_step_regime(sch["runs"], L_of)
        if why is not None:
            Cn, note = None, f"{why} ({regime_by_n(sch['runs'], L_of)})"
        if Cn is None:
            tests[label] = undetermined(-0.5, note)
            verdicts.append("inconclusive")
            parts.append(f"{label}: {note}")
            continue
        slopes = []  # (R, len(Ks)) slope in n at each K
        for K in Ks:
            Y = log_ratio([get[n, K]["stationarity"] for n in ns], [[Cn[n]] for n in ns]).T  # (R, len(ns))
            u = np.log(np.asarray(ns, float))
            uc = u - u.mean()
            slopes.append((Y - Y.mean(axis=1, keepdims=True)) @ uc / float(uc @ uc))
        Sl = np.array(slopes).T  # (R, m)
        # the slope in n at K is p + b K^(-1/2) + ...: its limit as K -> oo is the speedup exponent
        t = limit_test(Ks, Sl, predicted=-0.5, correction=RATE_CORRECTION, decay=True, what=f"{label} slope in n")
        t = unless_pre_asymptotic_in_n(t, leading_regime({n: [get[n, K] for K in Ks] for n in ns}))
        tests[label] = t
        verdicts.append(t.verdict)
        parts.append(
            f"{label}: slope in n (n = {ns[0]}..{ns[-1]}) by K "
            + ", ".join(f"K={K}: {v:.3f}" for K, v in zip(Ks, Sl.mean(axis=0)))
            + f"; {t}; {note}"
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
    uses=("bias",),
)


def check_complexity(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Linear speedup as iteration complexity: the iterations K_n(eps) to reach a stationarity level
    eps fall like 1/n. Levels eps_j: the geometric mean over n of the replica-mean stationarity at
    budget T_j = n K; per replica, K_n(eps_j) by log-log interpolation along each n's ladder; the
    slope of log K_n(eps_j) in log n, extrapolated as T_j -> oo (K^-1/2 correction)."""
    cx = data["complexity"]
    ns, Ts = cx["ns"], cx["budgets"]
    if len(ns) < 2 or len(Ts) < 2:
        return dict(
            verdict="inconclusive",
            measured=f"{len(ns)} n, {len(Ts)} budgets",
            predicted=f"-1 +- {RATE_DELTA:g}",
            detail="a slope in log n and its limit in T need at least 2 sizes n and 2 budgets T",
        )
    Cn, note = leading_constants(cx, cx["runs"])
    if Cn is None and "changes with n" in note:
        return not_applicable_in_n(note, -1.0)
    L_of = lambda r: cx.get("constants_by_n", {}).get(str(r["n"]), {}).get("L")  # noqa: E731
    why = outside_step_regime(cx["runs"], L_of)
    if why is not None:
        Cn, note = None, f"{why} ({regime_by_n(cx['runs'], L_of)})"
    if Cn is None:
        return dict(
            verdict="inconclusive",
            measured="not measured: " + (note.split(": ")[0] if "regime" in note else note),
            predicted=f"-1 +- {RATE_DELTA:g}",
            detail=f"{cx.get('schedule', 'exponential')}: {note}",
        )
    get = {(r["n"], r["budget"]): log_ratio(r["stationarity"], Cn[int(r["n"])]) for r in cx["runs"]}
    R = len(next(iter(get.values())))
    levels = [float(np.mean([get[n, T].mean() for n in ns])) for T in Ts]
    u = np.log(np.asarray(ns, float))
    uc = u - u.mean()
    ladders = [(np.log(np.array([T // n for T in Ts], float)), np.array([get[n, T] for T in Ts]).T) for n in ns]
    E = np.empty((R, len(Ts)))
    for j, lev in enumerate(levels):
        LK = np.array([[rates.iterations_to(logK, Y[r], lev) for logK, Y in ladders] for r in range(R)])  # (R, len(ns))
        E[:, j] = (LK - LK.mean(axis=1, keepdims=True)) @ uc / float(uc @ uc)
    t = limit_test(Ts, E, predicted=-1.0, correction=RATE_CORRECTION, decay=True, what="slope of log K_n(eps) in log n")
    t = unless_pre_asymptotic_in_n(t, leading_regime({n: [r for r in cx["runs"] if r["n"] == n] for n in ns}))
    detail = (
        f"{cx.get('schedule', 'exponential')}, n = {', '.join(map(str, ns))}, budgets T = nK = "
        f"{', '.join(map(str, Ts))} ({note}): levels "
        + ", ".join(f"{expo(v):.3g}" for v in levels)
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
            "levels": [expo(v) for v in levels],
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
    uses=("bias",),
)
