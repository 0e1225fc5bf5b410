"""What the checks share: combining verdicts, means, exponent and ratio-limit tests."""

from __future__ import annotations

import math

import numpy as np

from ... import rates
from ..criteria import RATE_CORRECTION, RATE_DELTA, RATIO_CORRECTION, RATIO_OMEGAS

__all__ = ["combine", "mean_se", "exponent_result", "log_ratio_limit", "series", "fmt", "RATE_RULES", "RATIO_RULES"]


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


def combine(verdicts):
    if "fail" in verdicts:
        return "fail"
    if "inconclusive" in verdicts or not verdicts:
        return "inconclusive"
    return "pass"


def mean_se(v):
    v = np.asarray(v, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")


def exponent_result(tests, verdicts, parts, predicted):
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


def log_ratio_limit(get, Ks, num, den):
    """test_limit of log(num/den) of the stationarity averages, paired by replica, as K -> oo."""
    S = np.array(
        [np.log(np.asarray(get[K, num]["stationarity"]) / np.asarray(get[K, den]["stationarity"])) for K in Ks]
    ).T
    return rates.test_limit(
        np.asarray(Ks, float), S, predicted=0.0, delta=RATE_DELTA, omega=RATIO_OMEGAS, correction=RATIO_CORRECTION
    )


def series(runs, key, Ks):
    get = {r["K"]: r for r in runs}
    return np.array([get[K][key] for K in Ks]).T  # (R, len(Ks))


def fmt(v):
    return "None" if v is None else f"{v:.3g}"
