"""What the checks share: combining verdicts, means, exponent and ratio-limit tests."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import rates
from ..criteria import RATE_CORRECTION, RATE_DELTA, RATE_OMEGA, RATIO_CORRECTION, RATIO_OMEGAS

if TYPE_CHECKING:
    from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence

    from numpy.typing import ArrayLike

__all__ = [
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
    worst = max(tests.values(), key=lambda t: abs(t.exponent - predicted))
    measured = "; ".join(
        f"{lab.split('(')[0]} {t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]" for lab, t in tests.items()
    )
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


def undetermined(
    predicted: float, reason: str, omega: float | tuple[float, ...] = RATE_OMEGA, bound_only: bool = False
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
        delta=RATE_DELTA,
        omega=omega,
        confidence=0.95,
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
) -> rates.ExponentTest:
    """:func:`sgpverify.rates.test_exponent` with the suite's band, or an inconclusive test
    (:func:`undetermined`) where the data cannot support a verdict."""
    x, Y = np.asarray(x, dtype=float), np.asarray(Y, dtype=float)
    why = _degenerate(x, Y, what, 2, positive=True)
    if why is not None:
        return undetermined(predicted, why, omega, bound_only)
    return rates.test_exponent(
        x, Y, predicted=predicted, delta=RATE_DELTA, omega=omega, bound_only=bound_only, correction=correction
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
    """A number in 3 significant digits, or ``None``."""
    return "None" if v is None else f"{v:.3g}"
