"""What the checks share: combining verdicts, means, exponent and ratio-limit tests."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from ... import rates
from ..criteria import (
    IN_AT_N,
    OUT_AT_N,
    RATE_CORRECTION,
    RATE_DELTA,
    RATE_OMEGA,
    RATIO_CORRECTION,
    RATIO_OMEGAS,
    REGIME_SHARE,
    SHORT_HORIZON,
    level,
)

if TYPE_CHECKING:
    from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence

    from numpy.typing import ArrayLike

__all__ = [
    "short_horizon",
    "combine",
    "mean_se",
    "exponent_result",
    "log_ratio",
    "log_ratio_limit",
    "series",
    "fmt",
    "undetermined",
    "exponent_test",
    "limit_test",
    "all_finite",
    "expo",
    "RATE_RULES",
    "RATIO_RULES",
    "CONSENSUS_REGIME_RULE",
    "consensus_regime",
    "inconclusive_because",
    "unless_pre_asymptotic",
    "unless_faster",
    "faster_than_the_bound",
    "leading_regime",
    "unless_pre_asymptotic_in_n",
    "outside_step_regime",
    "regime_by_n",
    "regime_L",
    "FASTER_RULE",
]

#: The model-free failures of an exponent claim (rates.test_limit, rules 1-3), as the criteria state them.
RATE_RULES = (
    "fail also, whatever the fit, if the exponent does not decay at the end (the last local interval reaches 0, "
    "above the band), if its deviation from the prediction grew from its closest approach to the end of the "
    "ladder, or if the last local "
    f"interval lies outside the band widened by the admissible correction {RATE_CORRECTION:g} (x_1/x)^1/2; an "
    "extrapolation that carries the last estimate more than delta toward the band (or against the last step) "
    "is inconclusive"
)

#: The same for a limit of log ratios: no correction size is admitted in advance (RATIO_CORRECTION).
RATIO_RULES = (
    "fail also, whatever the fit, if the deviation from the limit grew from its closest approach to the end of "
    "the ladder; an extrapolation "
    "that carries the last estimate more than delta toward the band (or against the last step) is inconclusive"
    "; a failure of either kind is inconclusive where the consensus average of a compared run still decays, "
    "but slower than K^-1, at the end of the ladder (" + "the consensus regime" + ")"
)


def combine(verdicts: Collection[str]) -> str:
    """One verdict from several: any fail fails; else any inconclusive (or none at all) is inconclusive."""
    if "fail" in verdicts:
        return "fail"
    if "inconclusive" in verdicts or not verdicts:
        return "inconclusive"
    return "pass"


def mean_se(v: ArrayLike) -> tuple[float, float]:
    """Mean and standard error of the mean (NaN with one value)."""
    v = np.asarray(v, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")


def exponent_result(
    tests: Mapping[str, rates.ExponentTest], verdicts: Collection[str], parts: Iterable[str], predicted: float
) -> dict[str, Any]:
    """The check's dict from per-schedule exponent tests; the headline numbers are the schedule
    farthest from the prediction."""
    finite = [t for t in tests.values() if math.isfinite(t.exponent)]
    worst = max(finite or tests.values(), key=lambda t: abs(t.exponent - predicted) if finite else 0.0)
    measured = "; ".join(_measured(lab.split("(")[0], t) for lab, t in tests.items())
    return dict(
        verdict=combine(verdicts),
        measured=measured,
        predicted=f"{predicted:g} +- {RATE_DELTA:g}",
        detail="; ".join(parts),
        extra={
            "exponent": worst.exponent,
            "interval": [worst.ci_low, worst.ci_high],
            "local_slopes": list(worst.local_slopes),
            "per_schedule": {lab: t.to_dict() for lab, t in tests.items()},
        },
    )


def _measured(label: str, t: rates.ExponentTest) -> str:
    """``"exponential -0.491 [-0.506, -0.477]"``, or, for a test without numbers, what it lacks
    (``"erdos-renyi not measured: needs K >= 4.1e+03"``): never a NaN."""
    if math.isfinite(t.exponent):
        return f"{label} {t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]"
    m = re.search(r"needs K >= \S+", t.reason or "")
    return f"{label} not measured" + (f": the step-size regime {m.group(0)}" if m else f": {t.reason}")


def undetermined(
    predicted: float,
    reason: str,
    omega: float | tuple[float, ...] = RATE_OMEGA,
    bound_only: bool = False,
    delta: float = RATE_DELTA,
) -> rates.ExponentTest:
    """An inconclusive exponent test whose data settle nothing (non-finite or non-positive values,
    too few points or replicas): the verdict says why, the numbers are NaN."""
    nan = math.nan
    return rates.ExponentTest(
        exponent=nan,
        ci_low=nan,
        ci_high=nan,
        stderr=nan,
        predicted=float(predicted),
        delta=delta,
        omega=omega,
        confidence=level(),
        local_slopes=(),
        local_slopes_se=(),
        x_mid=(),
        correction=nan,
        gof_pvalue=None,
        replicas=0,
        bound_only=bool(bound_only),
        admissible=None,
        verdict="inconclusive",
        rule="degenerate",
        reason=reason,
    )


def _degenerate(x: np.ndarray, Y: np.ndarray, what: str, points: int, positive: bool) -> str | None:
    """Why ``Y`` (replicas x points) cannot support a verdict, or None."""
    if x.size < points:
        return f"{what}: {x.size} point(s), at least {points} needed"
    if Y.ndim != 2 or Y.shape[0] < 2:
        return f"{what}: fewer than 2 replicas"
    bad = int(np.count_nonzero(~np.isfinite(Y)))
    if bad:
        return f"{what}: {bad} of {Y.size} values are not finite (a measurement broke or a run diverged)"
    if positive and np.any(Y <= 0):
        return f"{what}: {int(np.count_nonzero(Y <= 0))} of {Y.size} values are <= 0 (a rate is a slope of logs)"
    return None


def exponent_test(
    x: ArrayLike,
    Y: ArrayLike,
    *,
    predicted: float,
    omega: float | tuple[float, ...] = RATE_OMEGA,
    bound_only: bool = False,
    correction: float | None = RATE_CORRECTION,
    what: str = "the series",
    delta: float = RATE_DELTA,
) -> rates.ExponentTest:
    """:func:`sgpverify.rates.test_exponent` with the suite's band (or ``delta``), or an inconclusive
    test (:func:`undetermined`) where the data cannot support a verdict."""
    x, Y = np.asarray(x, dtype=float), np.asarray(Y, dtype=float)
    why = _degenerate(x, Y, what, 2, positive=True)
    if why is not None:
        return undetermined(predicted, why, omega, bound_only, delta)
    return rates.test_exponent(
        x,
        Y,
        predicted=predicted,
        delta=delta,
        omega=omega,
        bound_only=bound_only,
        correction=correction,
        confidence=level(),
    )


def limit_test(
    x: ArrayLike,
    S: ArrayLike,
    *,
    predicted: float,
    omega: float | tuple[float, ...] = RATE_OMEGA,
    bound_only: bool = False,
    correction: float | None = None,
    decay: bool = False,
    what: str = "the estimates",
) -> rates.ExponentTest:
    """:func:`sgpverify.rates.test_limit` with the suite's band, or an inconclusive test
    (:func:`undetermined`) where the estimates cannot support a verdict."""
    x, S = np.asarray(x, dtype=float), np.asarray(S, dtype=float)
    why = _degenerate(x, S, what, 2, positive=False)
    if why is not None:
        return undetermined(predicted, why, omega, bound_only)
    return rates.test_limit(
        x,
        S,
        predicted=predicted,
        delta=RATE_DELTA,
        omega=omega,
        bound_only=bound_only,
        correction=correction,
        decay=decay,
        confidence=level(),
    )


def expo(v: float) -> float:
    """``exp(v)``, inf beyond the float range (a spoiled series can carry a huge log ratio)."""
    return math.exp(v) if v < 709.0 else (math.inf if v == v else v)


def all_finite(*values: float | None) -> bool:
    """Whether every value is a finite number (None is not)."""
    return all(v is not None and math.isfinite(v) for v in values)


def log_ratio(num: ArrayLike, den: ArrayLike) -> np.ndarray:
    """``log(num / den)`` elementwise, quietly: zeros and NaN give -inf, inf or NaN, which the exponent
    and limit tests then report as inconclusive (saying why)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.asarray(num, dtype=float) / np.asarray(den, dtype=float))


def log_ratio_limit(
    get: Mapping[tuple[int, Hashable], Mapping[str, Any]], Ks: Sequence[int], num: Hashable, den: Hashable
) -> rates.ExponentTest:
    """test_limit of log(num/den) of the stationarity averages, paired by replica, as K -> oo."""
    S = np.array([log_ratio(get[K, num]["stationarity"], get[K, den]["stationarity"]) for K in Ks]).T
    return limit_test(
        Ks,
        S,
        predicted=0.0,
        omega=RATIO_OMEGAS,
        correction=RATIO_CORRECTION,
        what=f"log stationarity ratio {num}/{den}",
    )


def series(runs: Iterable[Mapping[str, Any]], key: str, Ks: Iterable[int]) -> np.ndarray:
    """``(R, len(Ks))``: the per-replica values of ``key`` of the runs, by K."""
    get = {r["K"]: r for r in runs}
    return np.array([get[K][key] for K in Ks]).T  # (R, len(Ks))


def fmt(v: float | None) -> str:
    """A number in 3 significant digits, ``None``, or the words for a NaN (no measurement)."""
    if v is None:
        return "None"
    return "unmeasured" if v != v else f"{v:.3g}"


#: The consensus-regime rule of the ratio claims, as the criteria and docs/theory.md state it.
CONSENSUS_REGIME_RULE = (
    "a ratio claim's higher-order terms are those of the consensus error, which the analysis bounds as "
    "O(1/K) against the leading O(K^-1/2); where a compared run's consensus average decays at the end of the "
    f"ladder (its last local slope's interval below 0) but slower than K^-1 (the interval above -1 + {RATE_DELTA:g}), "
    "those terms are not yet of higher order, and a deviation of the ratio is not decisive"
)


def consensus_regime(runs: Iterable[Mapping[str, Any]], label: str) -> str | None:
    """Why the consensus average of ``runs`` (one schedule's ladder) is pre-asymptotic at the end of
    the ladder, or None: its last local slope in K decays significantly (interval below 0) but
    significantly slower than K^-1 (interval above ``-1 + RATE_DELTA``). A consensus average that
    does not decay at all is no regime of the claim (its mechanism is broken), so it gives None."""
    got = _last_slope(list(runs), "consensus")
    if got is None:
        return None
    m, lo, hi, K0, K1 = got
    if hi < 0 and lo > -1.0 + RATE_DELTA:
        return (
            f"pre-asymptotic: the consensus average of {label} still decays slower than K^-1 at the end of the "
            f"ladder (local slope {m:.3f} [{lo:.3f}, {hi:.3f}] between K = {K0} and {K1}), so its "
            "higher-order terms are not yet of higher order and the ratio's deviation is not decisive; a longer "
            "ladder would settle it"
        )
    return None


def inconclusive_because(t: rates.ExponentTest, rule: str, why: str) -> rates.ExponentTest:
    """``t`` made inconclusive by ``rule``: its numbers kept, its reason extended by ``why`` (a
    premise of the claim that the data show does not hold yet)."""
    return dataclasses.replace(t, verdict="inconclusive", rule=rule, reason=f"{t.reason}; but {why}")


def unless_pre_asymptotic(t: rates.ExponentTest, *reasons: str | None) -> rates.ExponentTest:
    """``t``, or, where it fails by a rule that follows the data (growth, extrapolation) and a compared
    run is pre-asymptotic (``reasons``, from :func:`consensus_regime`), the same test made
    inconclusive by the rule ``"consensus-regime"``, saying why."""
    why = [r for r in reasons if r]
    if t.verdict != "fail" or t.rule not in ("growth", "extrapolation") or not why:
        return t
    return inconclusive_because(t, "consensus-regime", "; ".join(why))


#: What the rate claims in K say of a decay faster than predicted, as the criteria state it.
FASTER_RULE = (
    "a decay faster than the band (the extrapolated exponent or the last local slope below it, neither above "
    "it) is inconclusive, never a failure: Theorem 1 bounds the rate from above, and it is attained only once "
    "the noise floor dominates"
)


def _last_slope(runs, key):
    """The last local slope in K of ``key`` over ``runs`` (one ladder), per replica: mean, 95%
    interval and the two K, or None where the records cannot give one."""
    get = {r["K"]: r for r in runs}
    Ks = sorted(get)
    if len(Ks) < 2:
        return None
    a, b = (np.asarray(get[K][key], dtype=float) for K in Ks[-2:])
    if a.shape != b.shape or a.size < 2 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return None
    if np.any(a <= 0) or np.any(b <= 0):
        return None
    s = np.log(b / a) / math.log(Ks[-1] / Ks[-2])
    m, se = mean_se(s)
    tq = float(stats.t.ppf(0.5 + 0.5 * level(), s.size - 1))
    return m, m - tq * se, m + tq * se, Ks[-2], Ks[-1]


def leading_regime(runs_by_n: Mapping[int, Iterable[Mapping[str, Any]]]) -> str | None:
    """Why a claim in n cannot be judged on these runs, or None: at some n the stationarity average
    does not yet decay like K^-1/2 at the end of that n's K ladder (the interval of its last local
    slope lies outside -1/2 +- RATE_DELTA, the band of stationarity-rate). A claim in n compares the
    leading terms at different n; where at some n the leading term does not dominate yet (a
    transient, or a consensus term that grows with n), the slope in n is not the leading term's."""
    out = []
    for n, runs in sorted(runs_by_n.items()):
        got = _last_slope(list(runs), "stationarity")
        if got is None:
            continue
        m, lo, hi, K0, K1 = got
        if lo > -0.5 + RATE_DELTA or hi < -0.5 - RATE_DELTA:
            out.append(f"n = {n}: {m:.3f} [{lo:.3f}, {hi:.3f}] between K = {K0} and {K1}")
    if not out:
        return None
    return (
        "pre-asymptotic in K: the stationarity average does not yet decay like K^-1/2 at "
        + "; ".join(out)
        + f" (outside -0.5 +- {RATE_DELTA:g}), so the leading term does not dominate there and the slope in n is "
        "not the leading term's; a longer ladder in K would settle it"
    )


def unless_pre_asymptotic_in_n(t: rates.ExponentTest, why: str | None) -> rates.ExponentTest:
    """``t``, or, where it fails and ``why`` (from :func:`leading_regime`) says that some n is
    pre-asymptotic, the same test made inconclusive by the rule ``"leading-regime"``."""
    if t.verdict != "fail" or not why:
        return t
    return inconclusive_because(t, "leading-regime", why)


def faster_than_the_bound(t: rates.ExponentTest) -> rates.ExponentTest:
    """``t``, or, where :func:`unless_faster` found it faster than the band, its whole interval lies
    below the band and its last local slope is not above it, a pass by the rule
    ``"faster-than-bound"``: for a rate the analysis only bounds from above (the consensus, O(1/K)),
    a decay at least that fast over the asymptotic ladder is consistent with it, and the verdict says
    so: "faster than the bound's rate" where the last local slope lies below the band too, "at the
    bound's rate or faster" where it lies in the band (the extrapolation alone is faster)."""
    if t.verdict != "inconclusive" or t.rule != "faster" or not t.ci_high < t.predicted - t.delta:
        return t
    last = t.local_slopes[-1]  # not above the band: unless_faster made it "faster" only then
    how = (
        f"faster than the bound's rate K^{t.predicted:g}"
        if last < t.predicted - t.delta
        else f"at the bound's rate K^{t.predicted:g} or faster (the extrapolation below the band, the last local "
        f"slope {last:.3f} in it)"
    )
    return dataclasses.replace(
        t,
        verdict="pass",
        rule="faster-than-bound",
        reason=f"{t.reason.split('; but ')[0]}; {how}, which the analysis (an upper bound, O(K^p)) allows",
    )


def unless_faster(t: rates.ExponentTest) -> rates.ExponentTest:
    """``t``, or, where it fails on the fast side (the extrapolated exponent or the last local slope
    below the band, neither above it; a failure of the decay rule is never on the fast side), the
    same test made inconclusive by the rule ``"faster"``: the analysis bounds the rate from above
    (O(K^p)); that noise attains it is an asymptotic statement, and a faster decay over the measured
    range (a transient still dominating) contradicts no bound. (Before, both had to lie below the
    band, and an extrapolation carried just below it from a last local slope inside it failed.)"""
    if t.verdict != "fail" or t.rule == "decay" or not t.local_slopes:
        return t
    low, high = t.predicted - t.delta, t.predicted + t.delta
    last = t.local_slopes[-1]
    if t.exponent > high or last > high or not (t.exponent < low or last < low):
        return t
    return inconclusive_because(
        t,
        "faster",
        "the decay is faster than predicted, which the analysis (an upper bound on the rate) does not "
        "exclude before the noise floor dominates; a longer ladder would settle it",
    )


def regime_L(run: Mapping[str, Any]) -> float | None:
    """The L a run's step-size regime was recorded with (:func:`~sgpverify.suite.runs.step_regime_record`),
    or None where nothing was recorded (its effective step stayed within 2/L): the ``L_of`` of
    :func:`outside_step_regime` for experiments whose problems differ from run to run (scaled ones)."""
    return run.get("regime_L")


def outside_step_regime(runs: list[dict[str, Any]], L_of: Any) -> str | None:
    """Why the runs are outside the step-size regime of the analysis, or None.

    A node's own update moves its de-biased point by the effective step ``gamma / w_i`` times its
    gradient; beyond 2/L, a gradient step on an L-smooth function amplifies the node's deviation by
    ``gamma L / w_i - 1 > 1``, and consecutive such steps compound. Where push-sum weights fall
    (random schedules with delays: down to 1e-3), the effective step exceeds 2/L at most steps and
    the measured rate says nothing about the claim: the check is inconclusive there, saying so.

    A run is in the regime where its effective step ``gamma / w_min^k`` (``w_min^k`` the weight floor
    of step k) stays within 2/L, except at isolated steps (no two consecutive) making up at most
    :data:`~sgpverify.suite.criteria.REGIME_SHARE` of the run (``steps_out_*`` of
    :func:`~sgpverify.suite.runs.step_regime_record`). A run recorded without them is judged on its
    smallest weight. ``L_of(run)`` gives the declared L of the run's problem. (On the defaults every
    rate run has ``gamma / w_min <= 0.47``, against 2/L = 1.33.)
    """
    worst = None
    for r in runs:
        got = _outside(r, L_of(r))
        if got is not None and (worst is None or got[0] > worst[0]):
            worst = got
    if worst is None:
        return None
    need, eff, L, r, fixed, stretches = worst
    # twice a run's K, a power of two on the ladders, is printed whole: rounded up to two digits, it would pass the
    # next power of two, and a round would start its ladder twice as far as needed
    need_text = f"{need:.0f}" if stretches else f"{need:.2g}"
    if r.get("steps_out_share") is None:
        how = f"the effective step gamma / w_min = {eff:.3g} exceeds 2/L = {2 / L:.3g}"
    else:
        how = (
            f"the effective step gamma / w_min^k exceeds 2/L = {2 / L:.3g} at {r['steps_out_share']:.2%} of the "
            f"steps, up to {r['steps_out_longest']} in a row (the regime allows {REGIME_SHARE:.0%}, one at a time), "
            f"up to {eff:.3g}"
        )
    where = (
        f"with gamma = sqrt(n/K) the regime needs K >= {need_text}"
        if not fixed
        else f"its step gamma = {r['gamma']:.3g} does not fall with K (a ladder from the same start does not enter "
        f"the regime); with gamma = sqrt(n/K_min) of the ladder's start the regime needs K >= {need_text} there"
    )
    return (
        f"outside the step-size regime of the analysis: at K = {r['K']} (n = {r['n']}) {how}, beyond which a "
        f"gradient step can diverge (push-sum weights down to {r['weight_min']:.3g}); {where}"
    )


def regime_by_n(runs: list[dict[str, Any]], L_of: Any) -> str:
    """For a claim in n whose runs are outside the step-size regime (:func:`outside_step_regime`): the
    sizes n with a run outside it and those whose runs are all inside, in the words settling reads
    (:data:`~sgpverify.suite.criteria.OUT_AT_N`, ``"runs outside the regime at n = 4; in it at n = 8,
    16, 32"``); empty where no run is outside."""
    ns = sorted({int(r["n"]) for r in runs})
    out = sorted({int(r["n"]) for r in runs if _outside(r, L_of(r)) is not None})
    if not out:
        return ""
    inside = [n for n in ns if n not in out]
    text = OUT_AT_N + ", ".join(map(str, out))
    return text + (IN_AT_N + ", ".join(map(str, inside)) if inside else "")


def _outside(r: dict[str, Any], L: Any) -> tuple | None:
    """``(need, eff, L, r, fixed, stretches)`` of a run outside the step-size regime
    (:func:`outside_step_regime`'s rule), or None where it is inside (or has no effective step)."""
    eff = r.get("effective_step")
    if eff is None or not L or not all_finite(eff, L) or eff * L <= 2.0:
        return None
    share = r.get("steps_out_share")
    if share is not None and share <= REGIME_SHARE and r.get("steps_out_longest", 2) <= 1:
        return None  # isolated excursions, a small share of the run
    # the effective step at a given weight w falls below 2/L once the step is 2w/L, which gamma = sqrt(n/K)
    # reaches at K = n (L / (2 w))^2: the K of the run's step (n / gamma^2) times (gamma L / (2 w))^2; with the
    # share recorded, w is the floor's REGIME_SHARE quantile (the floor's distribution stays). A step that
    # does not fall with K (the constant step: sqrt(n/K_min), the ladder's start) falls with that start
    at = r["n"] / r["gamma"] ** 2
    fixed = not math.isclose(at, r["K"], rel_tol=1e-9)
    at = at if fixed else r["K"]
    w = r.get("weight_floor_share") if share is not None else r["weight_min"]
    need = at * (r["gamma"] * L / (2.0 * w)) ** 2 if w and w > 0 else math.inf
    stretches = share is not None and need <= at
    if stretches:
        need = 2.0 * at  # a small share, but in stretches: a longer run (a later start) shortens them
    return need, eff, L, r, fixed, stretches


def short_horizon(S2: float | None, cfg: Any) -> str:
    """Where the product constant S2 is infinite (the products' tail does not contract yet: q_tail = 1),
    why, as a suffix naming ``bound_horizon`` (settling lengthens it, :mod:`sgpverify.suite.settle`);
    else ""."""
    if S2 is None or math.isfinite(S2):
        return ""
    return f" (S2 = inf: the products {SHORT_HORIZON} = {cfg.bound_horizon}; their tail does not contract yet)"
