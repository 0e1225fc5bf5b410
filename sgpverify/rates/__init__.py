"""Log-log and log-linear rate fits with confidence intervals.

The theory predicts rates of two shapes: polynomial, ``y ~ c x^slope`` (e.g.
``E||grad f||^2 = O(1/sqrt(nK))``, slope -1/2 in K), and geometric,
``y ~ c rate^x`` (e.g. the contraction ``C q^t`` of the mixing products).
:func:`fit_loglog` and :func:`fit_loglinear` fit a straight line in log space
and return a :class:`RateFit` with the slope, a confidence interval for it,
the fitting window actually used and the number of replicas behind it, so a
measured rate is always reported with its uncertainty and its range.

Replicas (independent runs, the rows of ``y``) are the Monte-Carlo unit: with
two or more, one slope is fitted per replica and the interval is a Student t
interval over those slopes (method ``"replica-t"``). The points of one run's
series are correlated (iterate k+1 is built from iterate k), so the residuals
of a single series are not independent and an ordinary least-squares (OLS)
standard error understates the uncertainty; independent runs are independent
by construction. A single series still gets an OLS interval (``"ols-t"``),
valid when its log-space residuals are independent, and two points give the
exact line with no interval (``"exact"``).
"""

from __future__ import annotations

from .fits import RateFit, fit_loglinear, fit_loglog
from .limits import GOF_ALPHA, VERDICTS, ExponentTest, iterations_to, test_exponent, test_limit

__all__ = [
    "RateFit",
    "fit_loglog",
    "fit_loglinear",
    "ExponentTest",
    "test_exponent",
    "test_limit",
    "iterations_to",
    "VERDICTS",
    "GOF_ALPHA",
]
