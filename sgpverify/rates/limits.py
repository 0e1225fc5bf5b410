"""Asymptotic exponents and limits with three verdicts (:func:`test_exponent`, :func:`test_limit`).

An exponent is estimated as a limit: local slopes over doublings, regressed on the
correction term ``x^-omega``, extrapolated to ``x -> oo`` and judged two-sided (or,
for an upper bound, one-sided) against the prediction: ``pass``, ``fail`` or
``inconclusive`` (docs/theory.md, "Testing an exponent").
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.stats

from ..serialize import jsonable
from ..validation import check_float
from .fits import format_number

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

__all__ = ["VERDICTS", "ExponentTest", "GOF_ALPHA", "test_exponent", "test_limit", "iterations_to"]


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
    admissible : float or None
        The largest admissible correction at the last point (None: no size
        was admitted in advance).
    verdict : {"pass", "fail", "inconclusive"}
    rule : str
        The rule that decided (see :func:`test_limit`): ``"decay"``,
        ``"growth"``, ``"reach"``, ``"tail"``, ``"gof"``, ``"approaching"``,
        ``"extrapolation"``, ``"width"``, ``"interval"`` or ``"straddle"``.
    reason : str
        Why, with the numbers, and for "inconclusive" what would settle it.
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
    admissible: float | None
    verdict: str
    rule: str
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
    correction: float | None = 0.5,
    decay: bool | None = None,
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
    correction : float or None
        The largest admissible correction of the local slope at the first
        midpoint, decaying like ``x^-min(omega)`` (:func:`test_limit`). The
        default, 0.5, is the bound ``omega |u| / (1 - |u|)`` on the slope
        correction of ``A x^p (1 + u)`` with ``u = c x^-omega`` between -1/2
        and 1 at the first x, for ``omega = 1/2`` (docs/theory.md, "Testing
        an exponent"). None: no size admitted, the reach rule is off.
    decay : bool or None
        Apply the decay rule (:func:`test_limit`); None: when ``predicted < 0``.

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
        raise ValueError(f"y must be finite and positive, got y[{i[0]}, {i[1]}] = {format_number(Y[i])}")
    lx, lY = np.log(x), np.log(Y)
    S = np.diff(lY, axis=1) / np.diff(lx)  # (R, m-1) local slopes
    xm = np.exp(0.5 * (lx[1:] + lx[:-1]))
    return test_limit(
        xm,
        S,
        predicted=predicted,
        delta=delta,
        omega=omega,
        confidence=confidence,
        bound_only=bound_only,
        correction=correction,
        decay=predicted < 0 if decay is None else decay,
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
    correction: float | None = None,
    decay: bool = False,
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
    correction : float or None
        The largest admissible correction ``|s(x) - p|`` at the first point
        ``x[0]``, in the estimates' units, fixed in advance; at ``x`` it is
        ``correction * (x[0] / x)^min(omega)`` (a correction of the allowed
        form decays at least that fast). None: no size is admitted in advance,
        and the reach rule below is not applied.
    decay : bool
        The estimates are exponents of a quantity that the claim says decays
        (``predicted < 0``): enables the decay rule.

    Returns
    -------
    ExponentTest
        Verdict rules, in order (``s_j`` the replica mean of the estimates at
        ``x_j``, each with its ``confidence`` interval; "outside the band"
        means above it for ``bound_only``):

        1. decay (``decay=True``): ``fail`` if the last estimate's interval
           reaches 0 (no significant decay at the end of the measured range)
           and lies above the band;
        2. growth: ``fail`` if the last estimate's interval lies outside the
           band and its deviation from ``predicted``, which the claim says
           vanishes, is larger than at the closest approach (the point of
           smallest deviation) and at every point after it (in the mean, and
           per replica the last deviation minus each of their sizes
           significantly above 0 at ``confidence``):
           it grew from there to the end of the measured range (over the
           whole range when the first point is the closest);
        3. reach (``correction`` given): ``fail`` if the last estimate's
           interval lies outside the band widened by the largest admissible
           correction at ``x_m``: no admissible correction reconciles it;
        4. if the correction model is rejected (p < ``GOF_ALPHA``), the
           extrapolation is not to be trusted; tail: where the estimates
           end in a monotone, slowing approach (the last two steps of one
           sign, the last the smaller), the limit lies between the last
           estimate's interval and the rest that a correction of the allowed
           form (terms ``x^-omega_k``, ``omega_k >= min(omega)``, of one
           sign) can still bring, at most the last step (upper confidence
           limit) over ``r^min(omega) - 1``: ``pass`` if that range lies
           inside the band (for ``bound_only``, below its top);
           ``inconclusive`` otherwise (rule ``"gof"``). The tail never
           fails a claim: a hump (the ratio of a pre-asymptotic consensus
           term, rising then falling slowly) looks like a monotone end at
           the ladder's scale, and only the rules above, which rest on the
           data alone, fail;
        5. if the extrapolated interval lies outside the band: ``fail``,
           unless the extrapolation carries the last estimate more than
           ``delta`` and does so toward the band, or out of it (the last
           estimate lying inside), or away from it against the last step
           (the estimates approached the band over it): then
           ``inconclusive`` (the verdict would be the model's, not the
           data's);
        6. ``inconclusive`` if the interval is wider than ``delta``;
        7. ``pass`` if it lies inside the band (for ``bound_only``, below its
           top); otherwise ``inconclusive``.

        No rule compares the last estimate with the first alone: a trend
        toward the band is never a failure because its first point happened
        to lie closest.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([1e3, 2e3, 4e3, 8e3])
    >>> rng = np.random.default_rng(1)
    >>> s = -0.5 + 2.0 * x**-0.5 + 0.002 * rng.standard_normal((8, 4))
    >>> test_limit(x, s, predicted=-0.5).verdict
    'pass'
    >>> grows = 0.3 + 0.2 * np.log(x / 1e3) + 0.002 * rng.standard_normal((8, 4))
    >>> t = test_limit(x, grows, predicted=-0.5, decay=True)
    >>> t.verdict, t.rule
    ('fail', 'decay')
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
    if correction is not None:
        correction = check_float("correction", correction, low=0.0)
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
    admissible = None if correction is None else correction * float((xm[0] / xm[-1]) ** min(omegas))
    gof_bad = gof is not None and gof < GOF_ALPHA
    listed = ", ".join(f"{v:.3f}" for v in ls_mean)
    rule, verdict, reason = None, None, None
    if decay and last_hi >= 0 and last_lo > band_hi:
        rule, verdict = "decay", "fail"
        reason = (
            f"the quantity claimed to decay does not decay at the end of the measured range: the last "
            f"exponent's interval [{last_lo:.3f}, {last_hi:.3f}] reaches 0 and lies above the band "
            f"(estimates {listed})"
        )
    elif _grew(S, predicted, bound_only, tq) and (last_lo > band_hi or (not bound_only and last_hi < band_lo)):
        rule, verdict = "growth", "fail"
        reason = (
            f"the deviation from {predicted:g}, claimed to vanish, grew from the estimates' closest approach "
            f"to the end of the measured range (estimates {listed}; the last one's interval "
            f"[{last_lo:.3f}, {last_hi:.3f}] lies outside the band)"
        )
    elif admissible is not None and (
        last_lo > band_hi + admissible or (not bound_only and last_hi < band_lo - admissible)
    ):
        rule, verdict = "reach", "fail"
        reason = (
            f"the last estimate's interval [{last_lo:.3f}, {last_hi:.3f}] lies outside the band widened by "
            f"the largest admissible correction at x = {xm[-1]:g} ({admissible:.3f}, from {correction:g} at "
            f"x = {xm[0]:g}): no admissible correction reaches the band (estimates {listed})"
        )
    elif gof_bad:
        tail = _tail(S, xm, min(omegas), tq, last_lo, last_hi)
        misfit = f"the correction model {_model(omegas)} does not fit the estimates (p = {gof:.2g} < {GOF_ALPHA})"
        t_in = tail is not None and (tail[0] >= band_lo or bound_only) and tail[1] <= band_hi
        if t_in:
            est, lo, hi = float(ls_mean[-1]), tail[0], tail[1]
            rule, verdict = "tail", "pass"
            reason = (
                f"{misfit}, but the estimates ({listed}) converge monotonically: the limit lies in "
                f"[{lo:.3f}, {hi:.3f}] (the last estimate's interval and the rest of a correction of the "
                f"allowed form, at most {tail[2]:.3f} after the last step), "
                + (
                    f"below {band_hi:.3f} (an upper bound)"
                    if bound_only
                    else f"inside the band [{band_lo:.3f}, {band_hi:.3f}]"
                )
            )
        else:
            rule, verdict = "gof", "inconclusive"
            reason = f"{misfit}; larger x would settle it"
            if tail is not None:
                reason += f" (the limit lies in [{tail[0]:.3f}, {tail[1]:.3f}] if the approach stays monotone)"
    elif lo > band_hi or (not bound_only and hi < band_lo):
        # where the extrapolation carries the last estimate: toward the band (> 0) or away from it
        outside_last = ls_mean[-1] > band_hi or (not bound_only and ls_mean[-1] < band_lo)
        to_band = 1.0 if ls_mean[-1] < predicted else -1.0
        carried = to_band * (est - ls_mean[-1])
        step = to_band * (ls_mean[-1] - ls_mean[-2]) if m >= 2 else 0.0
        if abs(carried) > delta and not (outside_last and carried < 0 and step <= 0):
            where = (
                "out of the band, where the last estimate lies"
                if not outside_last
                else ("toward the band" if carried > 0 else "away from the band while they approach it")
            )
            rule, verdict = "approaching", "inconclusive"
            reason = (
                f"interval [{lo:.3f}, {hi:.3f}] outside the band [{band_lo:.3f}, {band_hi:.3f}], but the "
                f"extrapolation carries the last of the estimates ({listed}) {abs(carried):.3f} > delta = "
                f"{delta:g} {where}: the model decides, not the data; larger x would settle it"
            )
        else:
            rule, verdict = "extrapolation", "fail"
            reason = f"interval [{lo:.3f}, {hi:.3f}] outside the band [{band_lo:.3f}, {band_hi:.3f}]"
    elif hi - lo > delta:
        rule, verdict = "width", "inconclusive"
        reason = f"interval width {hi - lo:.3f} > delta = {delta:g}; more replicas or larger x would settle it"
    elif (lo >= band_lo or bound_only) and hi <= band_hi:
        rule, verdict = "interval", "pass"
        reason = (
            f"interval [{lo:.3f}, {hi:.3f}] below {band_hi:.3f} (an upper bound)"
            if bound_only
            else f"interval [{lo:.3f}, {hi:.3f}] inside the band [{band_lo:.3f}, {band_hi:.3f}]"
        )
    else:
        rule, verdict = "straddle", "inconclusive"
        reason = f"interval [{lo:.3f}, {hi:.3f}] straddles the band edge; more replicas or larger x would settle it"
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
        admissible=admissible,
        verdict=verdict,
        rule=rule,
        reason=reason,
    )


def _tail(S, xm, omega, tq, last_lo, last_hi):
    """Where the limit of monotonically converging estimates lies: ``(lo, hi, rest)``, or None where
    the estimates do not show a monotone, slowing approach at their end.

    If ``s(x) = p + sum_k b_k x^(-omega_k)`` with every ``omega_k >= omega`` and every ``b_k`` of one
    sign, the estimates move monotonically toward ``p`` and what is left after the last point is at
    most the last step over ``r^omega - 1`` (``r`` the ratio of the last two points): each term's
    rest is its last step times ``1 / (r^omega_k - 1) <= 1 / (r^omega - 1)``. The data must show
    that shape: the last step (replica means) smaller than the one before, and of its sign where
    the last step's direction is resolved (beyond its confidence half-width; a last step within it
    cannot contradict a monotone approach). The step's size enters at its upper confidence limit,
    and the rest is added on the side the estimates move to where the last step is significant (on
    both sides otherwise)."""
    R, m = S.shape
    if m < 3:
        return None
    d, dp = S[:, -1] - S[:, -2], S[:, -2] - S[:, -3]
    dm, dpm = float(d.mean()), float(dp.mean())
    half = tq * float(d.std(ddof=1)) / math.sqrt(R)
    if abs(dm) >= abs(dpm) or (abs(dm) > half and (dm > 0) != (dpm > 0)):
        return None
    if (dm > 0) != (dpm > 0) or dm == 0.0:
        # a step back within its noise: what is left is bounded from the step before, the last one the
        # data resolve as an approach (its size at its upper confidence limit, from the point before)
        half_p = tq * float(dp.std(ddof=1)) / math.sqrt(R)
        rest = (abs(dpm) + half_p) / ((float(xm[-2]) / float(xm[-3])) ** omega - 1.0)
        return float(last_lo - rest), float(last_hi + rest), rest
    rest = (abs(dm) + half) / ((float(xm[-1]) / float(xm[-2])) ** omega - 1.0)
    if abs(dm) <= half:  # the direction of the last step is not resolved
        return float(last_lo - rest), float(last_hi + rest), rest
    if dm > 0:
        return float(last_lo), float(last_hi + rest), rest
    return float(last_lo - rest), float(last_hi), rest


def _grew(S, predicted, bound_only, tq):
    """Whether the deviation of the estimates from ``predicted`` grew from their closest approach
    (the point of smallest mean deviation) to the last point: larger at the last point than at
    every point from the closest approach on, in the replica mean and with the paired difference to
    each of them significant (its interval, of half-width ``tq`` standard errors, above 0)."""
    R, m = S.shape
    if m < 2:
        return False
    side = 1.0 if bound_only or S[:, -1].mean() >= predicted else -1.0
    e = side * (S - predicted)  # deviation toward the last estimate's side
    dev = e.mean(axis=0) if bound_only else np.abs(S.mean(axis=0) - predicted)
    closest = int(np.argmin(dev))
    if closest == m - 1 or np.any(dev[closest:-1] >= dev[-1]):
        return False
    # paired growth to the last point: its deviation (on its side) minus each earlier one's size
    d = e[:, -1:] - (e[:, closest:-1] if bound_only else np.abs(S[:, closest:-1] - predicted))
    lo = d.mean(axis=0) - tq * d.std(axis=0, ddof=1) / math.sqrt(R)
    return bool(np.all(lo > 0))


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
