"""What the checks share: combining verdicts, means, exponent and ratio-limit tests."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import rates
from ..criteria import RATE_DELTA, RATIO_OMEGAS

if TYPE_CHECKING:
    from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence

    from numpy.typing import ArrayLike

__all__ = ["combine", "mean_se", "exponent_result", "log_ratio_limit", "series", "fmt"]


def combine(verdicts: Collection[str]) -> str:
    if "fail" in verdicts:
        return "fail"
    if "inconclusive" in verdicts or not verdicts:
        return "inconclusive"
    return "pass"


def mean_se(v: ArrayLike) -> tuple[float, float]:
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


def log_ratio_limit(
    get: Mapping[tuple[int, Hashable], Mapping[str, Any]], Ks: Sequence[int], num: Hashable, den: Hashable
) -> rates.ExponentTest:
    """test_limit of log(num/den) of the stationarity averages, paired by replica, as K -> oo."""
    S = np.array(
        [np.log(np.asarray(get[K, num]["stationarity"]) / np.asarray(get[K, den]["stationarity"])) for K in Ks]
    ).T
    return rates.test_limit(np.asarray(Ks, float), S, predicted=0.0, delta=RATE_DELTA, omega=RATIO_OMEGAS)


def series(runs: Iterable[Mapping[str, Any]], key: str, Ks: Iterable[int]) -> np.ndarray:
    get = {r["K"]: r for r in runs}
    return np.array([get[K][key] for K in Ks]).T  # (R, len(Ks))


def fmt(v: float | None) -> str:
    return "None" if v is None else f"{v:.3g}"
