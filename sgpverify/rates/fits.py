"""Log-log and log-linear rate fits with confidence intervals (:func:`fit_loglog`, :func:`fit_loglinear`)."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.stats

from ..serialize import jsonable
from ..validation import check_float

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["RateFit", "fit_loglog", "fit_loglinear", "format_number"]


def format_number(v: float) -> str:
    """A float formatted as Python prints it (no ``np.float64(...)`` wrapper)."""
    return str(float(v))


@dataclasses.dataclass(frozen=True)
class RateFit:
    """A straight-line fit in log space, with a confidence interval of the slope.

    Attributes
    ----------
    kind : {"loglog", "loglinear"}
        ``"loglog"``: ``log y = intercept + slope * log x``, i.e.
        ``y = exp(intercept) * x**slope``. ``"loglinear"``:
        ``log y = intercept + slope * x``, i.e. ``y = exp(intercept) * rate**x``
        with ``rate = exp(slope)`` per unit of x.
    slope : float
        Fitted exponent (loglog) or log-rate per unit x (loglinear); with
        replicas, the mean of the per-replica slopes.
    intercept : float
        Log of y at ``x = 1`` (loglog) or ``x = 0`` (loglinear); with
        replicas, the mean of the per-replica intercepts.
    ci_low, ci_high : float
        Confidence interval of the slope (NaN for method ``"exact"``).
    confidence : float
        Confidence level of the interval, e.g. 0.95.
    stderr : float
        Standard error of the slope (NaN for method ``"exact"``).
    window : tuple of float
        ``(x_min, x_max)``: smallest and largest x actually used, which may be
        narrower than the window asked for.
    n_points : int
        Number of x values used.
    replicas : int
        Number of replicas (rows of y) used.
    method : {"replica-t", "ols-t", "exact"}
        ``"replica-t"`` (two or more replicas): one least-squares slope per
        replica, ``stderr = sd / sqrt(R)`` and a Student t interval with
        ``R - 1`` degrees of freedom. ``"ols-t"`` (one series, three or more
        points): OLS standard error from the residuals and a Student t interval
        with ``n_points - 2`` degrees of freedom. ``"exact"`` (one series, two
        points): the line through both points; no residual degrees of freedom
        are left, so ``stderr``, ``ci_low`` and ``ci_high`` are NaN (None in
        :meth:`to_dict`) and :meth:`contains` is False for every value.
    """

    kind: str
    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    confidence: float
    stderr: float
    window: tuple
    n_points: int
    replicas: int
    method: str

    def rate(self) -> float:
        """Geometric rate per unit x, ``exp(slope)``, of a log-linear fit.

        The interval of the rate is ``(exp(ci_low), exp(ci_high))`` (exp is
        increasing). A log-log fit has an exponent, not a rate, so this raises.

        Raises
        ------
        ValueError
            If ``kind`` is ``"loglog"``.

        Examples
        --------
        >>> import numpy as np
        >>> t = np.arange(10.0)
        >>> round(fit_loglinear(t, 3.0 * 0.5**t).rate(), 12)
        0.5
        """
        if self.kind != "loglinear":
            raise ValueError(
                f"kind must be 'loglinear' for rate(), got {self.kind!r} (a log-log fit has an exponent: see slope)"
            )
        return math.exp(self.slope)

    def predict(self, x: ArrayLike) -> np.ndarray:
        """Fitted values ``exp(intercept) * x**slope`` or ``exp(intercept + slope * x)``.

        Parameters
        ----------
        x : array_like
            Points at which to evaluate the fitted law (positive for loglog).

        Returns
        -------
        ndarray
            Same shape as ``x``.

        Examples
        --------
        >>> import numpy as np
        >>> x = np.array([1.0, 10.0, 100.0])
        >>> fit_loglog(x, 2.0 / x).predict([1000.0]).round(12)
        array([0.002])
        """
        x = np.asarray(x, dtype=float)
        if self.kind == "loglog":
            bad = np.flatnonzero(~(x > 0))
            if bad.size:
                i = np.unravel_index(bad[0], x.shape) if x.ndim else ()
                idx = f"x[{', '.join(map(str, i))}]" if x.ndim else "x"
                raise ValueError(f"x must be positive for a log-log prediction, got {idx} = {format_number(x[i])}")
            return np.exp(self.intercept + self.slope * np.log(x))
        return np.exp(self.intercept + self.slope * x)

    def contains(self, value: float) -> bool:
        """Whether ``ci_low <= value <= ci_high`` (False when the interval is NaN).

        Examples
        --------
        >>> import numpy as np
        >>> x = np.array([1.0, 2.0, 4.0, 8.0])
        >>> y = np.array([[1.0, 0.52, 0.24, 0.126], [1.0, 0.49, 0.26, 0.124]])
        >>> fit = fit_loglog(x, y)
        >>> fit.contains(-1.0), fit.contains(-2.0)
        (True, False)
        """
        return bool(self.ci_low <= value <= self.ci_high)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (NaN becomes None, tuples lists)."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def __str__(self) -> str:
        pct = f"{100 * self.confidence:g}%"
        return (
            f"{self.kind} slope {self.slope:.6g} [{pct} CI {self.ci_low:.6g}, "
            f"{self.ci_high:.6g}] over x in [{self.window[0]:g}, {self.window[1]:g}] "
            f"({self.n_points} points, {self.replicas} replicas, {self.method})"
        )


def _index(y, flat_i):
    i = np.unravel_index(flat_i, y.shape)
    return f"y[{', '.join(str(int(k)) for k in i)}]", y[i]


def _prepare(x, y, window, confidence, kind):
    """Validate, select the window, and return (u, V, xs, confidence)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {x.shape}")
    m = x.size
    if m < 2:
        raise ValueError(f"x must have at least 2 points, got {m}")
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise ValueError(f"x must be finite, got x[{bad[0]}] = {format_number(x[bad[0]])}")
    y = np.asarray(y, dtype=float)
    if not ((y.ndim == 1 and y.shape[0] == m) or (y.ndim == 2 and y.shape[1] == m)):
        raise ValueError(f"y must have shape (m,) or (R, m) with m = len(x) = {m}, got {y.shape}")
    if y.ndim == 2 and y.shape[0] < 1:
        raise ValueError(f"y must have at least 1 replica (row), got shape {y.shape}")
    confidence = check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)

    if window is None:
        lo, hi = -math.inf, math.inf
    else:
        try:
            lo, hi = window
            lo = -math.inf if lo is None else float(lo)
            hi = math.inf if hi is None else float(hi)
            ok = not (math.isnan(lo) or math.isnan(hi)) and lo <= hi
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(
                f"window must be a pair (x_min, x_max) of numbers or None with x_min <= x_max, got {window!r}"
            )
    mask = (x >= lo) & (x <= hi)
    used = np.flatnonzero(mask)
    if used.size < 2:
        raise ValueError(f"window must contain at least 2 points, got {used.size}")
    xs = x[used]
    if np.all(xs == xs[0]):
        raise ValueError(f"x must take at least 2 distinct values in the window, got 1 (x = {format_number(xs[0])})")
    if kind == "loglog":
        bad = used[xs <= 0]
        if bad.size:
            raise ValueError(f"x must be positive for a log-log fit, got x[{bad[0]}] = {format_number(x[bad[0]])}")

    Y = y if y.ndim == 2 else y[None, :]
    sub = np.zeros(Y.shape, dtype=bool)
    sub[:, used] = True
    bad = np.flatnonzero(sub & ~np.isfinite(Y))
    if bad.size:
        name, val = _index(y, bad[0] if y.ndim == 2 else bad[0] % m)
        raise ValueError(f"y must be finite, got {name} = {format_number(val)}")
    bad = np.flatnonzero(sub & ~(Y > 0))
    if bad.size:
        name, val = _index(y, bad[0] if y.ndim == 2 else bad[0] % m)
        raise ValueError(f"y must be positive for a log fit, got {name} = {format_number(val)}")

    u = np.log(xs) if kind == "loglog" else xs
    V = np.log(Y[:, used])
    return u, V, xs, confidence


def _fit(kind, x, y, window, confidence):
    u, V, xs, confidence = _prepare(x, y, window, confidence, kind)
    R, m = V.shape
    uc = u - u.mean()
    suu = float(uc @ uc)
    Vc = V - V.mean(axis=1, keepdims=True)
    slopes = (Vc @ uc) / suu  # least squares per replica, centred for accuracy
    intercepts = V.mean(axis=1) - slopes * u.mean()
    q = 0.5 + 0.5 * confidence
    if R >= 2:
        method = "replica-t"
        slope, intercept = float(slopes.mean()), float(intercepts.mean())
        stderr = float(slopes.std(ddof=1) / math.sqrt(R))
        half = float(scipy.stats.t.ppf(q, R - 1)) * stderr
    elif m >= 3:
        method = "ols-t"
        slope, intercept = float(slopes[0]), float(intercepts[0])
        resid = Vc[0] - slope * uc
        stderr = math.sqrt(float(resid @ resid) / (m - 2) / suu)
        half = float(scipy.stats.t.ppf(q, m - 2)) * stderr
    else:
        method = "exact"
        slope, intercept = float(slopes[0]), float(intercepts[0])
        stderr = half = math.nan
    return RateFit(
        kind=kind,
        slope=slope,
        intercept=intercept,
        ci_low=slope - half,
        ci_high=slope + half,
        confidence=confidence,
        stderr=stderr,
        window=(float(xs.min()), float(xs.max())),
        n_points=int(m),
        replicas=int(R),
        method=method,
    )


_PARAMS = """
    Parameters
    ----------
    x : array_like, shape (m,)
        Finite abscissae, with at least 2 distinct values in the window
        (duplicates are allowed).{xreq}
    y : array_like, shape (m,) or (R, m)
        One series, or R replicas (independent runs), one per row. Must be
        finite and positive at the points in the window; values outside the
        window are not looked at (a tail that underflowed to 0 can be windowed
        out).
    window : (x_min, x_max) or None, optional
        Use only the points with ``x_min <= x <= x_max`` (inclusive); either end
        may be None (open). The window actually used, the min and max of the
        used x, is reported in ``RateFit.window``. Default: all points.
    confidence : float, optional
        Level of the slope's confidence interval, in (0, 1). Default 0.95.

    Returns
    -------
    RateFit
        Method ``"replica-t"`` if R >= 2, ``"ols-t"`` if R == 1 and at least 3
        points are used, ``"exact"`` (no interval) for one series of 2 points.

    Raises
    ------
    ValueError
        On a non-1-D or non-finite x, a y of the wrong shape, non-finite or
        non-positive y in the window, fewer than 2 points or 1 distinct x in the
        window, a malformed window, or a confidence outside (0, 1).
"""

_NOTES = """
    Notes
    -----
    With R >= 2 replicas each row r gets its own least-squares slope ``b_r``;
    the reported slope is ``mean(b_r)``, ``stderr = sd(b_r) / sqrt(R)`` and the
    interval ``slope +- t_{R-1}((1 + confidence) / 2) * stderr``. Independent
    runs are the Monte-Carlo unit: the ``b_r`` are independent and identically
    distributed whatever the correlation along one run's series (consecutive
    iterates of SGP share most of their history), so the interval stays valid;
    it is exact when the ``b_r`` are normal (e.g. Gaussian noise in log space)
    and asymptotically valid otherwise. An OLS interval on one series assumes
    independent residuals along the series and is too narrow when they are
    positively correlated; it is offered for single series only.
"""


def fit_loglog(
    x: ArrayLike, y: ArrayLike, *, window: tuple[float | None, float | None] | None = None, confidence: float = 0.95
) -> RateFit:
    """Fit ``y ~ c * x**slope`` by least squares on ``(log x, log y)``.
    {params}{notes}
        Examples
        --------
        >>> import numpy as np
        >>> K = np.array([100.0, 200.0, 400.0, 800.0, 1600.0])
        >>> fit = fit_loglog(K, 3.0 / np.sqrt(K))          # noise-free power law
        >>> round(fit.slope, 12), round(float(np.exp(fit.intercept)), 12), fit.method
        (-0.5, 3.0, 'ols-t')

        Replicas, one per row, and a window that drops the transient:

        >>> rng = np.random.default_rng(0)
        >>> K = np.geomspace(10, 10_000, 13)
        >>> y = 3.0 / np.sqrt(K) * np.exp(0.05 * rng.standard_normal((8, K.size)))
        >>> fit = fit_loglog(K, y, window=(50, None))
        >>> fit.method, fit.replicas, fit.n_points, fit.contains(-0.5)
        ('replica-t', 8, 10, True)
    """
    return _fit("loglog", x, y, window, confidence)


def fit_loglinear(
    x: ArrayLike, y: ArrayLike, *, window: tuple[float | None, float | None] | None = None, confidence: float = 0.95
) -> RateFit:
    """Fit ``y ~ c * rate**x`` by least squares on ``(x, log y)``; ``slope = log(rate)``.
    {params}{notes}
        Examples
        --------
        >>> import numpy as np
        >>> t = np.arange(0.0, 50.0, 5.0)
        >>> fit = fit_loglinear(t, 4.0 * 0.9**t)            # geometric decay, q = 0.9
        >>> round(fit.rate(), 12), round(float(np.exp(fit.intercept)), 12)
        (0.9, 4.0)
        >>> fit.window, fit.n_points
        ((0.0, 45.0), 10)
    """
    return _fit("loglinear", x, y, window, confidence)


if fit_loglog.__doc__:  # None under python -OO
    fit_loglog.__doc__ = fit_loglog.__doc__.format(
        params=_PARAMS.format(xreq=" Positive in the window (logs are taken)."), notes=_NOTES
    )
    fit_loglinear.__doc__ = fit_loglinear.__doc__.format(params=_PARAMS.format(xreq=""), notes=_NOTES)
