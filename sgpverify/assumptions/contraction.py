"""How fast the products of a schedule contract to rank one: measured deviations and envelopes.

:func:`contraction` and :func:`deviation_series` measure
``max_ij |[P^(s+t:s)]_ij - phi_i|`` by propagating a few columns (never an
n x n product); :func:`fit_contraction` fits ``dev[t] <= C q^t`` on the
deviations clear of round-off (the former ``q_fit``), :func:`envelope` finds
the valid envelope ``(C, q)`` with q at least a given rate, and
:func:`validate_envelope` judges an envelope against the deviations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from ..mixing import EPS

#: Deviations below this (absolute, entries are in [0, 1]) count as exact rank one.
ROUND_OFF_FLOOR = 256 * EPS


def max_deviation(V: np.ndarray, phi: np.ndarray) -> float:
    """max_ij |V_ij - phi_i| for a block of columns V (row max and min: no temporaries)."""
    if not V.size:
        return 0.0
    return float(max((V.max(axis=1) - phi).max(), (phi - V.min(axis=1)).max()))


def contraction(
    matrix_of: Callable[[int], sp.csr_array],
    N: int,
    n_real: int,
    horizon: int,
    starts: Iterable[int],
    columns: ArrayLike,
    floor: float = ROUND_OFF_FLOOR,
) -> np.ndarray:
    """Measured deviation of the products ``P^(s+t:s)`` from rank one.

    Returns ``dev`` with ``dev[t] = max over starts s and tracked columns j of
    max_i |[P^(s+t:s)]_ij - phi_i^(s+t)|`` where ``phi^(k) = P^(k:0) u`` and
    ``u`` is uniform over the real rows (a convex combination of the columns of
    every product ending at k). Products are tracked by propagating the chosen
    columns, never by forming n x n matrix products.
    """
    u = np.zeros(N)
    u[:n_real] = 1.0 / n_real
    phis = []
    v = u
    for k in range(horizon):
        v = matrix_of(k) @ v
        phis.append(v)
    dev = np.zeros(horizon)
    reached = np.zeros(horizon, dtype=bool)
    cols = np.asarray(columns)
    for s in starts:
        V = np.zeros((N, len(cols)))
        V[cols, np.arange(len(cols))] = 1.0
        for t in range(horizon - s):
            V = matrix_of(s + t) @ V
            d = max_deviation(V, phis[s + t])
            dev[t] = max(dev[t], d)
            reached[t] = True
            if d < floor:
                break
    return dev[reached] if reached.any() else dev[:0]


def deviation_series(
    matrix_of: Callable[[int], sp.csr_array],
    N: int,
    n_real: int,
    starts: Iterable[int],
    columns: ArrayLike,
    max_len: int,
    horizon: int | None = None,
    floor: float = ROUND_OFF_FLOOR,
) -> tuple[np.ndarray, np.ndarray]:
    """Deviations from rank one of ``P^(s+t:s)``, t < ``max_len``, and those inside a horizon.

    As :func:`contraction`, but a start s may run past ``horizon`` (up to
    ``max_len`` product lengths, or until its deviation falls below
    ``floor``). Returns ``(dev, dev_in_horizon)``: the max over starts and
    tracked columns for every t reached, and the same restricted to products
    ending before ``horizon`` (what :func:`contraction` returns).
    ``phi^(k) = P^(k:0) u`` is propagated alongside each start, never stored.
    """
    u = np.zeros(N)
    u[:n_real] = 1.0 / n_real
    dev = np.zeros(max_len)
    dev_h = np.zeros(max_len)
    reached = np.zeros(max_len, dtype=bool)
    reached_h = np.zeros(max_len, dtype=bool)
    cols = np.asarray(columns)
    for s in sorted(starts):
        phi = u
        for k in range(s):
            phi = matrix_of(k) @ phi
        V = np.zeros((N, len(cols)))
        V[cols, np.arange(len(cols))] = 1.0
        for t in range(max_len):
            P = matrix_of(s + t)
            V = P @ V
            phi = P @ phi
            d = max_deviation(V, phi)
            dev[t] = max(dev[t], d)
            reached[t] = True
            if horizon is not None and s + t < horizon:
                dev_h[t] = max(dev_h[t], d)
                reached_h[t] = True
            if d < floor:
                break
    return dev[reached], dev_h[reached_h]


#: Points used to fit q must exceed the round-off floor by this factor, so that
#: round-off perturbs each log-deviation by at most ~1e-4 (slope error ~1e-4 / t).
FIT_MARGIN = 1e4


def _upper_slope(ts, ys, passes=3):
    """Slope of the upper envelope of points: least squares, then refits on the
    points on or above the line. The max over entries of oscillating modes (complex
    eigenvalue pairs) makes log-deviations wiggle below a straight envelope; a plain
    fit over a window that is not a whole number of oscillations is biased by it."""
    ts = np.asarray(ts, dtype=float)
    ys = np.asarray(ys, dtype=float)
    coef = np.polyfit(ts, ys, 1)
    for _ in range(passes):
        keep = ys - np.polyval(coef, ts) >= 0
        if keep.sum() < 2 or np.ptp(ts[keep]) == 0:
            break
        ts, ys = ts[keep], ys[keep]
        coef = np.polyfit(ts, ys, 1)
    return float(coef[0])


def fit_contraction(dev: np.ndarray, floor: float = ROUND_OFF_FLOOR) -> tuple[float, float, tuple[int, int] | None]:
    """Fit ``dev[t] <= C q^t``: q from the log-linear tail, C the tightest envelope.

    q is the exponential of the upper-envelope slope of ``log dev[t]`` over the
    second half of the product lengths whose deviation exceeds
    ``FIT_MARGIN * floor`` (the asymptotic regime, clear of round-off), clipped
    to ``[0, 1]``; C is then the smallest constant with ``dev[t] <= C q^t``
    for every measured t above the floor.

    Returns ``(q, C, (t0, t1))``.
    """
    above = np.flatnonzero(dev > floor)
    if above.size == 0:
        return 0.0, 0.0, None
    fit_pts = np.flatnonzero(dev > floor * FIT_MARGIN)
    t_env = int(above[-1])
    t_last = int(fit_pts[-1]) if fit_pts.size else t_env
    if t_last < 1:
        return 0.0, float(dev[0]), (0, 0)
    t0 = t_last // 2
    ts = np.arange(t0, t_last + 1)
    ys = np.log(np.maximum(dev[ts], floor))
    slope = _upper_slope(ts, ys)
    q = float(min(1.0, math.exp(slope)))
    ts_all = np.arange(0, t_env + 1)
    if q <= 0.0:
        return 0.0, float(dev.max()), (t0, t_last)
    C = float(np.max(dev[ts_all] / q**ts_all))
    return q, C, (t0, t_last)


def validate_envelope(dev: ArrayLike, C: float, q: float, floor: float = ROUND_OFF_FLOOR) -> float:
    """Worst ratio ``dev[t] / (C q^t)`` over the product lengths t whose deviation exceeds ``floor``.

    ``dev[t]`` is the deviation of products of ``t + 1`` factors (exponent t,
    as :func:`contraction`). Points at or below the round-off floor are not
    judged. Computed in log space (``C q^t`` may underflow), so an envelope
    that touches the data gives ``1`` up to a few ulps. A value <= 1 means the envelope ``C q^t`` bounds every measured
    deviation; > 1 means it fails somewhere (e.g. a q fitted on too short a
    window, validated over a longer horizon).

    Examples
    --------
    >>> import numpy as np
    >>> dev = 0.9 ** np.arange(50)
    >>> validate_envelope(dev, 1.0, 0.9) <= 1 + 1e-12     # holds, up to round-off
    True
    >>> validate_envelope(dev, 1.0, 0.85) > 1     # rate too optimistic
    True
    """
    dev = np.asarray(dev, dtype=float)
    t = np.flatnonzero(dev > floor)
    if t.size == 0:
        return 0.0
    if C <= 0:
        return math.inf
    if q <= 0:
        return math.inf if t.max() > 0 else float(dev[0] / C)
    # in log space: C q^t underflows long before the ratio is meaningless
    return float(np.exp(np.max(np.log(dev[t]) - math.log(C) - t * math.log(q))))


def envelope(dev: ArrayLike, q_lower: float, floor: float = ROUND_OFF_FLOOR) -> tuple[float, float]:
    """The valid envelope ``(C, q)``, ``q >= q_lower``, with the smallest ``C / (1 - q)``.

    For each q, ``C(q) = max_t dev[t] / q^t`` over the points above ``floor``
    is the smallest constant with ``C q^t >= dev[t]``; among ``q`` in
    ``[q_lower, 1)`` the one minimising ``C(q) / (1 - q)`` (the combination
    the Theorem 1 threshold depends on, as its fourth power) is returned.
    ``log C(q) - log(1 - q)`` is convex in ``log q``, so the minimum is found
    by a grid search refined by a bounded scalar minimisation. For
    ``q_lower >= 1`` the envelope is ``(C(q_lower), q_lower)``.

    Returns ``(C, q)``.

    Examples
    --------
    >>> import numpy as np
    >>> dev = 2.0 * 0.5 ** np.arange(40)
    >>> C, q = envelope(dev, 0.5)
    >>> round(C, 12), q
    (2.0, 0.5)
    """
    dev = np.asarray(dev, dtype=float)
    t = np.flatnonzero(dev > floor)
    q_lower = float(q_lower)
    if t.size == 0:
        return 0.0, q_lower
    ld = np.log(dev[t])

    def logC(u):
        return float(np.max(ld - t * u))

    if q_lower >= 1.0:
        return math.exp(logC(math.log(q_lower))), q_lower
    if t.max() == 0:  # only dev[0] above round-off: any q works, C = dev[0]
        return float(dev[0]), q_lower

    def f(u):
        return logC(u) - math.log(-math.expm1(u))

    u_lo = math.log(max(q_lower, 1e-12))
    u_hi = math.log1p(-1e-12)
    grid = np.concatenate([[u_lo], np.log(np.linspace(math.exp(u_lo), math.exp(u_hi), 400)[1:])])
    vals = [f(u) for u in grid]
    i = int(np.argmin(vals))
    u = float(grid[i])
    if 0 < i < len(grid) - 1:
        from scipy.optimize import minimize_scalar

        res = minimize_scalar(f, bounds=(grid[i - 1], grid[i + 1]), method="bounded", options={"xatol": 1e-12})
        if res.fun <= vals[i]:
            u = float(res.x)
    q = max(q_lower, math.exp(u))
    C = float(np.max(dev[t] / q ** t.astype(float)))
    return C, q
