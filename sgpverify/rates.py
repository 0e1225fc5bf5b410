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

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.stats

from ._json import jsonable
from ._validate import check_float

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

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


def _num(v):
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
                raise ValueError(f"x must be positive for a log-log prediction, got {idx} = {_num(x[i])}")
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
        raise ValueError(f"x must be finite, got x[{bad[0]}] = {_num(x[bad[0]])}")
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
        raise ValueError(f"x must take at least 2 distinct values in the window, got 1 (x = {_num(xs[0])})")
    if kind == "loglog":
        bad = used[xs <= 0]
        if bad.size:
            raise ValueError(f"x must be positive for a log-log fit, got x[{bad[0]}] = {_num(x[bad[0]])}")

    Y = y if y.ndim == 2 else y[None, :]
    sub = np.zeros(Y.shape, dtype=bool)
    sub[:, used] = True
    bad = np.flatnonzero(sub & ~np.isfinite(Y))
    if bad.size:
        name, val = _index(y, bad[0] if y.ndim == 2 else bad[0] % m)
        raise ValueError(f"y must be finite, got {name} = {_num(val)}")
    bad = np.flatnonzero(sub & ~(Y > 0))
    if bad.size:
        name, val = _index(y, bad[0] if y.ndim == 2 else bad[0] % m)
        raise ValueError(f"y must be positive for a log fit, got {name} = {_num(val)}")

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


# ---------------------------------------------------------------- asymptotic exponents

#: Verdicts of :func:`test_exponent` (and of every suite check).
VERDICTS = ("pass", "fail", "inconclusive")


@dataclasses.dataclass(frozen=True)
class ExponentTest:
    """The asymptotic exponent of ``y ~ A x^p (1 + b x^(-omega))`` and its verdict.

    Attributes
    ----------
    exponent : float
        Extrapolated exponent ``p``: mean over replicas of the intercept of the
        local slopes regressed on ``x_mid^(-omega)``.
    ci_low, ci_high : float
        Student t interval of ``exponent`` over replicas (``confidence``).
    predicted, delta : float
        The claim: ``p = predicted``; the band ``[predicted - delta, predicted + delta]``.
    local_slopes : tuple of float
        Mean over replicas of the slope between successive x (over doublings
        when x doubles), at ``x_mid`` (geometric midpoints).
    local_slopes_se : tuple of float
        Their standard errors over replicas.
    x_mid : tuple of float
    correction : float
        Mean over replicas of ``b'``, the coefficient of ``x_mid^(-omega)``.
    gof_pvalue : float or None
        p-value of the goodness-of-fit test of the correction model (Hotelling
        T^2 on the residual space over replicas); None with fewer than three
        local slopes (no residual degree of freedom).
    verdict : {"pass", "fail", "inconclusive"}
    reason : str
        Why (which rule decided), and for "inconclusive" what would settle it.
    """

    exponent: float
    ci_low: float
    ci_high: float
    stderr: float
    predicted: float
    delta: float
    omega: float | tuple[float, ...]
    confidence: float
    local_slopes: tuple
    local_slopes_se: tuple
    x_mid: tuple
    correction: float
    gof_pvalue: float | None
    replicas: int
    bound_only: bool
    verdict: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def __str__(self) -> str:
        return (
            f"exponent {self.exponent:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}] vs "
            f"{self.predicted:g} +- {self.delta:g}: {self.verdict} ({self.reason})"
        )


#: Significance level below which the correction model is rejected.
GOF_ALPHA = 0.01


def _gof(S, U):
    """Hotelling T^2 p-value that the residuals of s = p + U b vanish in mean.

    ``S`` (R, m) estimates per replica, ``U`` (m,) or (m, j) correction terms;
    the residual space is the orthogonal complement of span{1, U}.
    """
    R, m = S.shape
    A = np.column_stack([np.ones(m), U])
    j = A.shape[1]
    k = m - j
    if k < 1:
        return None
    Q, _ = np.linalg.qr(A, mode="complete")
    V = S @ Q[:, j:]  # (R, k): components outside the model space
    if R <= k:
        return None
    vbar = V.mean(axis=0)
    cov = np.cov(V, rowvar=False, ddof=1).reshape(k, k)
    try:
        t2 = float(R * vbar @ np.linalg.solve(cov, vbar))
    except np.linalg.LinAlgError:
        return 0.0 if np.any(np.abs(vbar) > 0) else 1.0
    F = (R - k) / (k * (R - 1)) * t2
    return float(scipy.stats.f.sf(F, k, R - k))


def test_exponent(
    x: ArrayLike,
    y: ArrayLike,
    *,
    predicted: float,
    delta: float = 0.05,
    omega: float | Sequence[float] = 0.5,
    confidence: float = 0.95,
    bound_only: bool = False,
) -> ExponentTest:
    """Test an asymptotic power law ``y ~ A x^p`` as a limit, with three verdicts.

    The local slopes between successive ``x`` (``log(y_{j+1}/y_j) /
    log(x_{j+1}/x_j)``, at the geometric midpoints ``x_mid``) of a law
    ``A x^p (1 + c x^(-omega) + O(x^(-2 omega)))`` are ``p + b x_mid^(-omega)``
    up to ``O(x^(-2 omega))``. :func:`test_limit` then extrapolates them.

    Parameters
    ----------
    x : array_like, shape (m,)
        Increasing positive abscissae (K values, or n), at least 2.
    y : array_like, shape (R, m)
        Positive measurements, one row per independent replica (R >= 2).
    predicted : float
        The exponent the claim predicts.
    delta : float
        Half-width of the band that counts as agreement; fixed in advance.
    omega : float
        Exponent of the correction term (from the bound's higher-order terms).
    confidence : float
        Level of the interval.
    bound_only : bool
        The claim is only an upper bound on the decay (``y = O(x^p)``):
        decaying faster is not a failure.

    Returns
    -------
    ExponentTest

    Examples
    --------
    >>> import numpy as np
    >>> K = 256.0 * 2 ** np.arange(5)
    >>> rng = np.random.default_rng(0)
    >>> y = K**-0.5 * (1 + 0.8 * K**-0.5) * np.exp(0.01 * rng.standard_normal((8, 5)))
    >>> t = test_exponent(K, y, predicted=-0.5)
    >>> t.verdict, round(t.exponent, 2)
    ('pass', -0.5)
    >>> test_exponent(K, y, predicted=-0.4).verdict
    'fail'
    """
    x = np.asarray(x, dtype=float)
    Y = np.asarray(y, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"x must be 1-D with at least 2 points, got shape {x.shape}")
    if Y.ndim != 2 or Y.shape[1] != x.size:
        raise ValueError(f"y must have shape (R, m) with m = len(x) = {x.size}, got {Y.shape}")
    if not np.all(np.isfinite(x)) or np.any(x <= 0) or np.any(np.diff(x) <= 0):
        raise ValueError(f"x must be positive, finite and increasing, got {x.tolist()}")
    bad = np.flatnonzero(~(np.isfinite(Y) & (Y > 0)))
    if bad.size:
        i = np.unravel_index(bad[0], Y.shape)
        raise ValueError(f"y must be finite and positive, got y[{i[0]}, {i[1]}] = {_num(Y[i])}")
    lx, lY = np.log(x), np.log(Y)
    S = np.diff(lY, axis=1) / np.diff(lx)  # (R, m-1) local slopes
    xm = np.exp(0.5 * (lx[1:] + lx[:-1]))
    return test_limit(
        xm, S, predicted=predicted, delta=delta, omega=omega, confidence=confidence, bound_only=bound_only
    )


def test_limit(
    x: ArrayLike,
    estimates: ArrayLike,
    *,
    predicted: float,
    delta: float = 0.05,
    omega: float | Sequence[float] = 0.5,
    confidence: float = 0.95,
    bound_only: bool = False,
) -> ExponentTest:
    """Test the limit as ``x -> oo`` of estimates ``s(x) = p + b x^(-omega) + o(x^(-omega))``.

    Per replica the estimates are regressed on ``x^(-omega)``; the intercept
    estimates ``p``. The replicas give a Student t interval, the residuals a
    goodness-of-fit test (Hotelling T^2 on the residual space).

    Parameters
    ----------
    x : array_like, shape (m,)
        Increasing positive points (e.g. geometric midpoints of doublings of K).
    estimates : array_like, shape (R, m)
        One row per independent replica (R >= 2), e.g. local slopes.
    predicted, delta, omega, confidence, bound_only
        As in :func:`test_exponent`.

    Returns
    -------
    ExponentTest
        Verdict rules, in order: ``fail``, whatever the model, if the last
        estimate's interval lies outside the band and the estimates do not
        approach it (the last no nearer than the first, or farther than the
        one before); ``inconclusive`` if
        the correction model is rejected (p < ``GOF_ALPHA``: the extrapolation
        is not to be trusted); ``fail`` if the interval lies outside the band
        (for ``bound_only``, only above it); ``inconclusive`` if the interval
        is wider than ``delta``; ``pass`` if it lies inside the band (for
        ``bound_only``, below its top); otherwise ``inconclusive``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([1e3, 2e3, 4e3, 8e3])
    >>> rng = np.random.default_rng(1)
    >>> s = -0.5 + 2.0 * x**-0.5 + 0.002 * rng.standard_normal((8, 4))
    >>> test_limit(x, s, predicted=-0.5).verdict
    'pass'
    """
    xm = np.asarray(x, dtype=float)
    S = np.asarray(estimates, dtype=float)
    if xm.ndim != 1 or xm.size < 1 or not np.all(np.isfinite(xm)) or np.any(xm <= 0):
        raise ValueError(f"x must be 1-D, positive and finite, got {xm.tolist()}")
    if S.ndim != 2 or S.shape[1] != xm.size:
        raise ValueError(f"estimates must have shape (R, m) with m = len(x) = {xm.size}, got {S.shape}")
    R = S.shape[0]
    if R < 2:
        raise ValueError(f"estimates must have at least 2 replicas (rows), got {R}")
    if not np.all(np.isfinite(S)):
        raise ValueError("estimates must be finite, got non-finite entries")
    delta = check_float("delta", delta, low=0.0, low_open=True)
    confidence = check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    omegas = tuple(float(o) for o in (omega if isinstance(omega, (tuple, list)) else (omega,)))
    for o in omegas:
        check_float("omega", o, low=0.0, low_open=True)
    U = np.column_stack([xm ** (-o) for o in omegas])  # (m, k) correction terms
    m = S.shape[1]
    tq = float(scipy.stats.t.ppf(0.5 + 0.5 * confidence, R - 1))
    if m >= 1 + len(omegas):
        A = np.column_stack([np.ones(m), U])
        coef = np.linalg.lstsq(A, S.T, rcond=None)[0]  # (1 + k, R): intercept and corrections per replica
        p = coef[0]
        b = coef[1]
        gof = _gof(S, U)
    else:  # too few estimates for the correction model: no extrapolation
        b = np.zeros(R)
        p = S[:, -1]
        gof = None
    est = float(p.mean())
    se = float(p.std(ddof=1) / math.sqrt(R))
    lo, hi = est - tq * se, est + tq * se
    band_lo, band_hi = predicted - delta, predicted + delta
    ls_mean = S.mean(axis=0)
    ls_se = S.std(axis=0, ddof=1) / math.sqrt(R)
    last_lo, last_hi = ls_mean[-1] - tq * ls_se[-1], ls_mean[-1] + tq * ls_se[-1]
    dist = np.abs(ls_mean - predicted)
    # moving away: no nearer than at the start, or receding over the last step (e.g. slopes that
    # cross the band and keep going)
    not_toward = m >= 2 and (dist[-1] >= dist[0] or dist[-1] > dist[-2])
    last_out = last_lo > band_hi or (not bound_only and last_hi < band_lo)
    gof_bad = gof is not None and gof < GOF_ALPHA
    model_free_fail = not_toward and last_out
    if model_free_fail:
        verdict, reason = (
            "fail",
            (
                f"the estimates ({', '.join(f'{v:.3f}' for v in ls_mean)}) do not approach "
                f"the band and the last one's interval [{last_lo:.3f}, {last_hi:.3f}] lies outside it"
            ),
        )
    elif gof_bad:
        verdict, reason = (
            "inconclusive",
            (
                f"the correction model {_model(omegas)} does not fit the estimates "
                f"(p = {gof:.2g} < {GOF_ALPHA}); larger x would settle it"
            ),
        )
    elif lo > band_hi or (not bound_only and hi < band_lo):
        verdict, reason = "fail", f"interval [{lo:.3f}, {hi:.3f}] outside the band [{band_lo:.3f}, {band_hi:.3f}]"
    elif hi - lo > delta:
        verdict, reason = (
            "inconclusive",
            (f"interval width {hi - lo:.3f} > delta = {delta:g}; more replicas or larger x would settle it"),
        )
    elif (lo >= band_lo or bound_only) and hi <= band_hi:
        verdict = "pass"
        reason = (
            f"interval [{lo:.3f}, {hi:.3f}] below {band_hi:.3f} (an upper bound)"
            if bound_only
            else f"interval [{lo:.3f}, {hi:.3f}] inside the band [{band_lo:.3f}, {band_hi:.3f}]"
        )
    else:
        verdict, reason = (
            "inconclusive",
            (f"interval [{lo:.3f}, {hi:.3f}] straddles the band edge; more replicas or larger x would settle it"),
        )
    return ExponentTest(
        exponent=est,
        ci_low=lo,
        ci_high=hi,
        stderr=se,
        predicted=float(predicted),
        delta=delta,
        omega=omegas[0] if len(omegas) == 1 else omegas,
        confidence=confidence,
        local_slopes=tuple(float(v) for v in ls_mean),
        local_slopes_se=tuple(float(v) for v in ls_se),
        x_mid=tuple(float(v) for v in xm),
        correction=float(b.mean()),
        gof_pvalue=gof,
        replicas=R,
        bound_only=bool(bound_only),
        verdict=verdict,
        reason=reason,
    )


def iterations_to(logK: Sequence[float] | np.ndarray, logS: Sequence[float] | np.ndarray, level: float) -> float:
    """log K at which log S (a curve along ``logK``) reaches ``level``.

    Linear interpolation in log-log on the first segment that brackets the level;
    below or above the ladder, the end segment extended. Used for iteration
    complexity: the iterations a run needs to reach a stationarity level.

    Examples
    --------
    >>> import numpy as np
    >>> logK = np.log([100.0, 200.0, 400.0])
    >>> logS = -0.5 * logK  # S = K^(-1/2)
    >>> round(float(np.exp(iterations_to(logK, logS, np.log(0.06)))), 1)
    277.8
    """
    m = len(logS)
    for i in range(m - 1):
        if logS[i] >= level >= logS[i + 1] or logS[i] <= level <= logS[i + 1]:
            break
    else:
        i = 0 if level > max(logS[0], logS[-1]) else m - 2
    if logS[i + 1] == logS[i]:
        return float(logK[i])
    return float(logK[i] + (level - logS[i]) * (logK[i + 1] - logK[i]) / (logS[i + 1] - logS[i]))


def _model(omegas):
    return " + ".join(f"x^-{o:g}" for o in omegas)


test_exponent.__test__ = False  # not pytest tests despite their names
test_limit.__test__ = False
