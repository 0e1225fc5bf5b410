"""The verdicts of declared claims (:mod:`sgpverify.declare`): the exponent test, the upper bound and the
limit to round-off, each from the per-replica values a declared claim's runs recorded.

Each check takes the prediction (an :class:`~sgpverify.declare.Exponent`, :class:`~sgpverify.declare.Bound`
or :class:`~sgpverify.declare.Vanishes`), the runs (``[{"K", "n", "params", "x", "gamma", "values",
"f0", "g0", "d", "constants"}]``, in ladder order) and the method's label, and returns the suite's check
dict (verdict, measured, predicted, detail, extra).

Examples
--------
>>> import numpy as np
>>> deterministic(np.ones((4, 3))), deterministic(np.array([[1.0, 2.0], [1.1, 2.0], [0.9, 2.0]]))
(True, False)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from .suite.claims.common import exponent_test
from .suite.criteria import RATE_CORRECTION, level

__all__ = ["DETERMINISTIC_SPREAD", "deterministic", "exponent_check", "bound_check", "vanishes_check"]


#: Replicas whose values agree to this relative spread at every point of the ladder are copies of one
#: deterministic computation (exact gradients): 2^10 unit round-offs, far below any sampling spread
#: of R >= 3 noisy replicas and above the last-bit differences of one computation batched differently.
DETERMINISTIC_SPREAD = 2.0**10 * float(np.finfo(float).eps)


def deterministic(Y: np.ndarray) -> bool:
    """True where the replicas (rows of ``Y``, one column per ladder point) agree to round-off at every
    point: relative spread ``(max - min) / |mean| <= DETERMINISTIC_SPREAD``."""
    Y = np.asarray(Y, dtype=float)
    spread = (Y.max(axis=0) - Y.min(axis=0)) / np.maximum(np.abs(Y.mean(axis=0)), np.finfo(float).tiny)
    return bool(np.all(spread <= DETERMINISTIC_SPREAD))


def _slopes(x, means):
    return np.diff(np.log(means)) / np.diff(np.log(x))


def exponent_check(p: Any, runs: list[dict], method: str) -> dict[str, Any]:
    """The suite's exponent test (:func:`sgpverify.suite.claims.common.exponent_test`, with the claim's
    band) of an Exponent prediction; refused (inconclusive) where the replicas agree to round-off
    (:func:`deterministic`)."""
    x = np.array([float(r["x"]) for r in runs])
    Y = np.array([r["values"] for r in runs], dtype=float).T  # (R, m)
    predicted = f"{p.value:g} +- {p.band:g}"
    if Y.shape[0] >= 2 and np.all(np.isfinite(Y)) and np.all(Y > 0) and deterministic(Y):
        # Every replica is the same computation: the interval over replicas has zero width, and the
        # test would weigh the extrapolation's model error (the correction terms it leaves out) against
        # no spread at all. Refuse, and show what was measured.
        means = Y.mean(axis=0)
        why = (
            f"the {Y.shape[0]} replicas agree to round-off at every point (relative spread <= "
            f"{DETERMINISTIC_SPREAD:.1e}): an exponent test needs replicas that differ (noise); a noise-free "
            "claim is a bound(...) or a vanishes(...)"
        )
        return dict(
            verdict="inconclusive",
            measured=f"not tested: {method} deterministic",
            predicted=predicted,
            detail=why
            + "; local slopes "
            + ", ".join(f"{v:.3f}" for v in _slopes(x, means))
            + f"; values by {p.in_} "
            + ", ".join(f"{xi:g}: {m:.4g}" for xi, m in zip(x, means)),
            extra={"deterministic": True},
        )
    t = exponent_test(
        x,
        Y,
        predicted=p.value,
        delta=p.band,
        omega=p.omega,
        bound_only=p.bound_only,
        correction=RATE_CORRECTION if p.in_ == "K" else None,
        what=f"{method} by {p.in_}",
    )
    if not math.isfinite(t.exponent):  # the data settle nothing (exponent_test says why)
        return dict(verdict="inconclusive", measured=f"not measured: {t.reason}", predicted=predicted, detail=t.reason)
    means = Y.mean(axis=0)
    return dict(
        verdict=t.verdict,
        measured=f"{method} {t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]",
        predicted=predicted,
        detail=f"{t}; local slopes "
        + ", ".join(f"{s:.3f}" for s in t.local_slopes)
        + f"; means by {p.in_} "
        + ", ".join(f"{xi:g}: {m:.4g}" for xi, m in zip(x, means)),
        extra={"exponent": t.exponent, "interval": [t.ci_low, t.ci_high], "test": t.to_dict()},
    )


def _evaluate(expr: Any, r: dict, what: str) -> float:
    """The value of a bound's (or a tolerance's) expression at one run of the ladder."""
    import sympy

    c = r["constants"]
    env = {"L": c["L"], "sigma2": c["sigma2"], "zeta2": c["zeta2"], "f_lower": c["f_lower"]}
    env.update(K=r["K"], n=r["n"], gamma=r["gamma"], eps=float(np.finfo(float).eps), **r["params"])
    env["Delta"] = float(np.mean(r["f0"])) - c["f_lower"]
    if "g0" in r:
        env.update(G0=float(np.mean(r["g0"])), d=r["d"])
    free = {str(s) for s in expr.free_symbols} - set(env)
    if free:
        raise ValueError(f"{what} uses unknown symbols {sorted(free)} (known: {', '.join(sorted(env))})")
    return float(expr.subs({sympy.Symbol(k): val for k, val in env.items()}))


def _interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its t interval over replicas at the suite's level (zero width for identical replicas)."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.inf
    tq = float(stats.t.ppf(0.5 + 0.5 * level(), max(1, v.size - 1)))
    return m, m - tq * se, m + tq * se


def vanishes_check(p: Any, runs: list[dict], method: str) -> dict[str, Any]:
    """The limit to round-off of a Vanishes prediction (rule: :func:`sgpverify.declare.vanishes`)."""
    last = runs[-1]
    tol = _evaluate(p.tol, last, "vanishes tol")
    m, lo, hi = _interval(last["values"])
    rows = [(r["K"], *_interval(r["values"])) for r in runs]
    stalled = len(runs) >= 2 and lo >= (1 - p.stall) * rows[-2][3]
    if hi <= tol:
        verdict, why = "pass", f"at K={last['K']} the mean's interval lies below the tolerance {tol:.3g}"
    elif lo > tol and stalled:
        verdict = "fail"
        why = f"a floor above the tolerance {tol:.3g}: it fell by less than {p.stall:g} over the last rung"
    else:
        verdict = "inconclusive"
        why = f"still above the tolerance {tol:.3g} at K={last['K']}" + (
            "" if stalled else " and still falling: a longer ladder would settle it"
        )
    return dict(
        verdict=verdict,
        measured=f"{method} {m:.3g} at K={last['K']} (tol {tol:.3g})",
        predicted=f"<= {tol:.3g} ({p.tol})",
        detail=why + "; by K " + ", ".join(f"{K}: {mk:.4g} [{lk:.4g}, {hk:.4g}]" for K, mk, lk, hk in rows),
        extra={"tolerance": tol, "final": m, "stalled": bool(stalled)},
    )


def bound_check(p: Any, runs: list[dict], method: str) -> dict[str, Any]:
    """A Bound prediction at every point of the ladder."""
    rows, verdicts = [], []
    for r in runs:
        B = _evaluate(p.expr, r, "bound") * (1 + p.rel)
        m, lo, hi = _interval(r["values"])
        verdicts.append("fail" if lo > B else "pass" if hi <= B else "inconclusive")
        rows.append((r["x"], m, lo, hi, B))
    verdict = "fail" if "fail" in verdicts else "inconclusive" if "inconclusive" in verdicts else "pass"
    worst = max(rows, key=lambda row: row[1] / row[4] if row[4] > 0 else math.inf)
    slack = worst[1] / worst[4] if worst[4] > 0 else math.inf
    return dict(
        verdict=verdict,
        measured=f"{method} max mean / bound {slack:.3g}",
        predicted=p.words(),
        detail="; ".join(f"x={x:g}: {m:.4g} [{lo:.4g}, {hi:.4g}] vs bound {B:.4g}" for x, m, lo, hi, B in rows),
        extra={"ratios": [row[1] / row[4] for row in rows], "slack": slack},
    )
