"""The numbers every criterion of the suite uses, fixed before any run.

They are part of the claims' criteria (printed in every report), so they
live apart from the configuration: a user's setting never changes them.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator

import numpy as np

from ..pep.posterior import check_rtol

__all__ = [
    "level",
    "spending",
    "ALPHA",
    "EPS",
    "RATE_DELTA",
    "RATE_OMEGA",
    "RATIO_OMEGAS",
    "RATE_CORRECTION",
    "RATIO_CORRECTION",
    "REGIME_SHARE",
    "LOOSE_BOUND",
    "SHORT_HORIZON",
    "OUT_AT_N",
    "IN_AT_N",
]


EPS = np.finfo(float).eps


#: Half-width of the band around a predicted exponent that counts as agreement.
#: Fixed before any run: half of the smallest departure (0.1) the exponent test
#: must detect, and 25-50 times the O(1/K) remainder left after the K^-1/2
#: correction at the preset's smallest K (docs/theory.md, "Testing an exponent").
RATE_DELTA = 0.05


#: Exponent of the correction term of every rate: the derived bound's
#: higher-order terms are O(gamma) = O(K^-1/2) relative to the leading one.
RATE_OMEGA = 0.5


#: Correction terms of a ratio of two runs that share the leading term (delays, baselines): the
#: bound's expansion in gamma ~ K^-1/2 has O(gamma) and O(gamma^2) relative terms, and the O(gamma)
#: part can cancel (it does when the nodes' Hessians agree), so both are fitted (docs/theory.md).
RATIO_OMEGAS = (0.5, 1.0)


#: The largest admissible correction of an exponent estimate (local slope in K, slope in n) at the
#: first point of its ladder, decaying like x^-1/2 from there: an estimate outside the band widened
#: by it at the last point cannot reach the band (rates.test_limit, the reach rule). 0.5 bounds the
#: slope correction omega u / (1 + u) of A K^p (1 + u), u ~ K^-1/2, whenever the higher-order terms
#: lie between -1/2 and 1 times the leading term at the first K (docs/theory.md, "Testing an exponent").
RATE_CORRECTION = 0.5


#: The admissible correction of a log ratio: none is fixed in advance (None: the reach rule is off for
#: the ratio claims). The bounds' higher-order terms, evaluated on the runs, exceed the leading term 10
#: to 10^4 times (docs/theory.md), so they admit any ratio the runs could show; a size fixed without
#: them would fail honest problems whose heterogeneity makes the topology's terms large at every K.
#: The ratio claims fail by the growth rule and the extrapolation.
RATIO_CORRECTION = None


#: The share of a run's steps at which the weight floor may take the effective step gamma / w_min^k
#: beyond 2/L, one step at a time, with the run still in the step-size regime of the rate claims.
#: Only consecutive steps beyond 2/L compound a node's amplification; isolated ones, a small share of
#: an average over K steps, do not make a run unstable (docs/theory.md, "The step-size regime").
#: Set after looking at runs: see there.
REGIME_SHARE = 0.01


#: How loose a bound must be, measured/bound below this on the honest runs, for its control to count
#: as undetectable on the setting rather than missed. A bound check fails only where a departure lifts
#: the measurement past the bound; its controls (no de-biasing, a gradient bias of norm sigma) lift it
#: a few to a hundred times, so a bound 100 times above the measurement hides them by construction:
#: the check has no power against them there, and no longer run gives it any (settling skips them).
#: Set after looking at runs: the Erdos-Renyi setting of docs/guide.md, where (b2) is 1000 times and
#: (c2) 4e5 times above the measurement (docs/theory.md, "Controls of a loose bound").
LOOSE_BOUND = 1e-2


def pep_tolerance(entry: dict) -> float:
    """The relative accuracy of a worst-case entry's value: the solver's rule for its Gram side
    (:func:`sgpverify.pep.posterior.check_rtol`: ``max(1e-6, 1e-7 * side)``) plus its
    relative duality gap (where the solver reported a dual value)."""
    wc, dual = entry["worst_case"], entry.get("dual")
    ok = isinstance(dual, (int, float)) and math.isfinite(dual) and math.isfinite(wc)
    gap = abs(dual - wc) / max(abs(wc), 1e-300) if ok else 0.0
    return check_rtol(entry["gram_size"]) + gap


#: The error rate of every interval of a check: each is a 95% interval (two-sided, or one-sided where
#: the claim is a bound), so a check errs at about this rate where its statistic is a single interval.
ALPHA = 0.05

_SHARE = contextvars.ContextVar("sgpverify_alpha_share", default=1.0)


def level(confidence: float = 1.0 - ALPHA) -> float:
    """The confidence to use for an interval the criteria state at ``confidence``: that level itself,
    or, inside :func:`spending` (a round of ``verify --settle``), ``1 - share (1 - confidence)``.

    Examples
    --------
    >>> level()
    0.95
    >>> with spending(0.25):
    ...     round(level(), 4)
    0.9875
    """
    share = _SHARE.get()
    return confidence if share == 1.0 else 1.0 - share * (1.0 - confidence)


@contextlib.contextmanager
def spending(share: float) -> Iterator[None]:
    """Evaluate checks with every interval's error rate scaled by ``share`` in (0, 1] (error spending:
    settling round r uses ``2^-r``, so that all rounds together err at most once more the planned
    run's rate; docs/theory.md, "Settling")."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    token = _SHARE.set(float(share))
    try:
        yield
    finally:
        _SHARE.reset(token)


#: The words a bound check uses where its product constant S2 is infinite because the products of the
#: mixing matrices do not contract within ``bound_horizon`` (settling reads them and lengthens it).
SHORT_HORIZON = "do not contract within bound_horizon"

#: The words a claim in n uses for the sizes n whose runs are outside the step-size regime, and those whose
#: runs are all inside (``"runs outside the regime at n = 4; in it at n = 8, 16, 32"``; settling reads them
#: and moves the n ladder up where only its smallest n are outside).
OUT_AT_N = "runs outside the regime at n = "
IN_AT_N = "; in it at n = "
