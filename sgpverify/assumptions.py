"""Numerical checks of the mixing assumptions of the SGP analysis.

:func:`check_mixing` measures, over a finite horizon, every quantity that the
analysis assumes of the mixing matrices ``P^(k)`` (THEORY.md sections 5-6):
column-stochasticity, non-negativity, positive self-weights, the window length
B of strong connectivity and the diameter Delta of the window unions, the
contraction constants C and q of the products ``P^(k:s)``, and the push-sum
weight floor. It also evaluates the published Nedic-Olshevsky constants for the
same n and B so that users see how loose they are.

The rate of the products is obtained three ways (issue 9, docs/constants.md):
:func:`exact_rate` (periodic schedules: the period product's spectral radius
on the disagreement subspace, to the power 1/period), :func:`lyapunov_rate`
(every schedule: top Lyapunov exponent, with a 95% interval) and the old
log-linear fit (:func:`fit_contraction`, kept as ``q_fit``). The envelope
``(C, q)`` reported takes ``q`` at least the exact rate (or the Lyapunov upper
end) and validates ``C q^t`` against the deviations until round-off
(:func:`envelope`, :func:`validate_envelope`). :func:`effective_step`,
:func:`weight_floor_ok`, :func:`rate_bound_valid`, :func:`theorem1_threshold`
and :func:`nedic_olshevsky_constants` turn the constants into the checks of
the analysis, each with a negative control in the tests.

All values are measured on the schedule at hand; nothing is assumed.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ._json import jsonable
from ._validate import check_choice, check_int, rng_for
from .errors import MixingAssumptionError
from .graphs import PeriodicTopology, is_strongly_connected
from .mixing import EPS, MixingSchedule, column_sum_tolerance, mixing_schedule

__all__ = [
    "MixingReport",
    "check_mixing",
    "find_B",
    "diameter",
    "contraction",
    "deviation_series",
    "fit_contraction",
    "LyapunovRate",
    "lyapunov_rate",
    "ExactRate",
    "exact_rate",
    "envelope",
    "validate_envelope",
    "rate_bound_valid",
    "EffectiveStep",
    "effective_step",
    "weight_floor_ok",
    "Threshold",
    "theorem1_threshold",
    "NedicOlshevsky",
    "nedic_olshevsky_constants",
    "nedic_olshevsky_hypotheses",
    "log10_gap",
    "NEDIC_OLSHEVSKY_HYPOTHESES",
    "CONSTANTS_FAMILIES",
    "constants_table",
    "format_constants_table",
]

#: Deviations below this (absolute, entries are in [0, 1]) count as exact rank one.
ROUND_OFF_FLOOR = 256 * EPS


@dataclasses.dataclass(frozen=True)
class MixingReport:
    """What :func:`check_mixing` measured (every value is measured, not assumed).

    Attributes
    ----------
    topology : str
        Name of the schedule.
    n, tau, rows, horizon : int
        Real nodes, maximum delay, rows of the (augmented) matrices
        ``n * (tau + 1)``, and the number of steps examined.
    delay : str or None
        Delay model (None when tau = 0).
    column_stochastic : bool
        Every column of every ``P^(k)`` sums to 1 within ``atol``.
    column_sum_error : float
        Largest ``|1 - column sum|`` seen.
    atol : float
        Tolerance used for the column sums.
    nonnegative : bool
        No negative entry.
    positive_self_weights : bool
        Every real node keeps a positive share of its own mass at every step.
    min_self_weight : float
        Smallest real-node self weight ``P^(k)[i, i]``.
    min_positive_entry : float
        Smallest positive entry of any ``P^(k)``.
    doubly_stochastic : bool
        Every ``P^(k)`` is also row-stochastic (push-sum weights then stay 1).
    B : int or None
        Smallest window length such that every window ``[lB, (l+1)B)`` inside
        the horizon has a strongly connected union graph; None if none.
    diameter : int or None
        Largest diameter of those window unions (exact up to 2048 rows or for
        circulant schedules; above, an upper bound, see ``diameter_exact``).
    diameter_exact : bool
        Whether ``diameter`` is exact or an upper bound.
    q, C : float or None
        The validated envelope ``max_ij |P^(s+t:s) - phi 1^T| <= C q^t``.
        CHANGED MEANING (issue 9): q is no longer fitted. ``q >= q_exact`` for
        periodic schedules, else ``q >= `` the upper end of the Lyapunov
        interval (an estimate, see ``q_source``); among such q the one with the
        smallest ``C / (1 - q)`` is taken, and C is the smallest constant for
        which ``C q^t`` bounds the deviation at every t of ``envelope_horizon``
        (points below the round-off floor are not judged). The old fitted
        pair is ``C_fit``, ``q_fit``.
    q_source : str or None
        ``"exact"`` (q >= q_exact) or ``"lyapunov-upper"`` (q >= upper end of
        ``q_lyapunov_interval``: an estimate, not a certificate).
    q_fit, C_fit : float
        The former fitted pair: q from a log-linear upper-envelope fit of the
        second half of the deviations clear of round-off within ``horizon``
        (clipped to [0, 1]), C the tightest constant within ``horizon``.
    q_fit_window : list of int or None
        The range ``[t0, t1]`` of product lengths used to fit ``q_fit``.
    q_exact : float or None
        Periodic schedules (with or without fixed delays): spectral radius of
        the period product on the disagreement subspace, to the power
        1/period (:func:`exact_rate`). None for aperiodic schedules.
    q_exact_method : str or None
        How ``q_exact`` was computed (circulant-fft, dense or arpack).
    q_lyapunov, q_lyapunov_interval : float, list of float
        Top Lyapunov exponent of the products on the disagreement subspace as
        a per-step rate, and its 95% interval from independent segments
        (:func:`lyapunov_rate`, ``lyapunov_steps`` steps).
    envelope_horizon : int
        Product lengths measured for the envelope: the deviation is followed
        past ``horizon`` until it reaches the round-off floor (or a cap).
    envelope_reaches_floor : bool
        The deviation of every start reached the round-off floor.
    envelope_horizon_over_fit : float or None
        ``envelope_horizon / (t1 + 1)``, t1 the end of the fit window.
    envelope_horizon_ok : bool
        ``envelope_reaches_floor`` or ``envelope_horizon_over_fit >= 10``.
    envelope_worst_ratio : float
        ``max_t dev[t] / (C q^t)`` over the envelope horizon (<= 1 + round-off).
    fit_envelope_worst_ratio : float
        The same for ``(C_fit, q_fit)``: > 1 shows the fit failing beyond its
        window (where the envelope horizon is long enough to see it).
    q_fit_below_true : bool
        ``q_fit < q_exact`` (periodic) or ``q_fit <`` the lower end of the
        Lyapunov interval: the fitted envelope must fail for large t, even
        where that happens below round-off and no measurement sees it.
    one_over_one_minus_q, one_over_one_minus_q_fit : float
        ``1 / (1 - q)`` for the envelope and the fit (inf when q >= 1).
    threshold_log10, threshold_fit_log10, threshold_theory_log10 : float or None
        log10 of the known part of Theorem 1's threshold
        (:func:`theorem1_threshold`) at ``L = 1`` (it scales as ``L^4``) from
        the envelope, the fitted pair and the Nedic-Olshevsky constants.
    contraction_starts, contraction_columns : int
        Number of start steps s and of columns of the products tracked.
    q_theory, C_theory, delta_theory : float or None
        Nedic-Olshevsky constants for this n (rows) and B: in general
        ``q = (1 - N^(-N B))^(1/B)``, ``delta = N^(-N B)``; for doubly stochastic
        schedules ``q = min((1 - 1/(4 N^3))^(1/B), max_k sigma_2(P^(k)))``,
        ``delta = 1``; ``C = 4``.
    q_theory_log10_gap : float or None
        ``log10(1 - q_theory)``, exact where ``q_theory`` rounds to 1.0.
    q_true_log10_gap : float or None
        ``log10(1 - q_exact)`` (else of ``q_lyapunov``), exact in log space.
    q_theory_valid : bool or None
        ``log10(1 - q_theory) <= log10(1 - q_true)``: the theory's q is at least
        the true rate (compared in log space, so exact when q_theory rounds
        to 1). None when q_theory is undefined.
    nedic_olshevsky_outside : list of str
        Hypotheses of the Nedic-Olshevsky lemma that the (augmented) matrices
        break (:func:`nedic_olshevsky_hypotheses`); with tau > 0 the buffer
        rows have a zero diagonal, so ``q_theory`` etc. are outside the lemma.
    weight_min : float
        Smallest push-sum weight of a real node over the horizon, from w = 1.
    weight_floor_ok : bool or None
        ``weight_min >= delta_theory`` (up to round-off).
    period : int or None
        Period of the schedule (None if random or aperiodic).
    period_product_error : float or None
        ``max_ij |Pi - phi 1^T|`` for the product Pi over one period,
        ``phi`` the mean column of Pi.
    period_product_lambda2 : float or None
        Second largest eigenvalue modulus of Pi (computed when rows <= 1024).
    violations : list of str
        Each broken assumption, with the measured value.
    """

    topology: str
    n: int
    tau: int
    rows: int
    horizon: int
    delay: str | None
    column_stochastic: bool
    column_sum_error: float
    atol: float
    nonnegative: bool
    positive_self_weights: bool
    min_self_weight: float
    min_positive_entry: float
    doubly_stochastic: bool
    B: int | None
    diameter: int | None
    diameter_exact: bool
    q: float | None
    C: float | None
    q_source: str | None
    q_fit: float | None
    C_fit: float | None
    q_fit_window: list | None
    q_exact: float | None
    q_exact_method: str | None
    q_lyapunov: float
    q_lyapunov_interval: list
    envelope_horizon: int
    envelope_reaches_floor: bool
    envelope_horizon_over_fit: float | None
    envelope_horizon_ok: bool
    envelope_worst_ratio: float
    fit_envelope_worst_ratio: float
    q_fit_below_true: bool
    one_over_one_minus_q: float
    one_over_one_minus_q_fit: float
    threshold_log10: float | None
    threshold_fit_log10: float | None
    threshold_theory_log10: float | None
    contraction_starts: int
    contraction_columns: int
    q_theory: float | None
    C_theory: float | None
    delta_theory: float | None
    q_theory_log10_gap: float | None
    q_true_log10_gap: float | None
    q_theory_valid: bool | None
    nedic_olshevsky_outside: list
    weight_min: float
    weight_floor_ok: bool | None
    period: int | None
    period_product_error: float | None
    period_product_lambda2: float | None
    violations: tuple = ()

    @property
    def passed(self):
        """True when no assumption is violated."""
        return not self.violations

    def to_dict(self):
        """JSON-ready dict of every field."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = jsonable(v)
        out["passed"] = self.passed
        return out

    def __str__(self):
        return format_report(self)


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)


def format_report(r):
    """A readable two-column table of a MixingReport."""
    rows = [
        ("topology", r.topology),
        ("n (rows)", f"{r.n} ({r.rows})"),
        ("tau, delay", f"{r.tau}, {r.delay or '-'}"),
        ("horizon", r.horizon),
        (
            "column_stochastic",
            f"{_fmt(r.column_stochastic)} (max |1 - sum| = {r.column_sum_error:.1e}, atol = {r.atol:.1e})",
        ),
        ("nonnegative", r.nonnegative),
        ("positive_self_weights", f"{_fmt(r.positive_self_weights)} (min {r.min_self_weight:.6g})"),
        ("min_positive_entry", r.min_positive_entry),
        ("doubly_stochastic", r.doubly_stochastic),
        ("B", r.B),
        ("diameter", r.diameter if r.diameter_exact or r.diameter is None else f"<= {r.diameter} (upper bound)"),
        ("q_exact", r.q_exact if r.q_exact is None else f"{r.q_exact:.6g} ({r.q_exact_method})"),
        ("q_lyapunov", f"{r.q_lyapunov:.6g} [{r.q_lyapunov_interval[0]:.6g}, {r.q_lyapunov_interval[1]:.6g}]"),
        (
            "q (envelope)",
            f"{_fmt(r.q)} (q >= {'q_exact' if r.q_source == 'exact' else 'Lyapunov upper end: an estimate'})",
        ),
        ("C (envelope)", f"{_fmt(r.C)} (worst dev/(C q^t) = {r.envelope_worst_ratio:.6g})"),
        ("products tracked", f"{r.contraction_columns} of {r.rows} columns from {r.contraction_starts} starts"),
        (
            "envelope horizon",
            f"{r.envelope_horizon} ({'reaches round-off floor' if r.envelope_reaches_floor else 'cap'}"
            f"{'' if r.envelope_horizon_over_fit is None else f', {r.envelope_horizon_over_fit:.3g} x fit window'})"
            f"{'' if r.envelope_horizon_ok else ' TOO SHORT'}",
        ),
        (
            "q_fit, C_fit",
            f"{_fmt(r.q_fit)}, {_fmt(r.C_fit)} (window {_fmt(r.q_fit_window)}, "
            f"worst dev/(C q^t) = {r.fit_envelope_worst_ratio:.6g}"
            f"{'; BELOW the true rate: fails for large t' if r.q_fit_below_true else ''})",
        ),
        ("1/(1-q): envelope, fit", f"{_fmt(r.one_over_one_minus_q)}, {_fmt(r.one_over_one_minus_q_fit)}"),
        (
            "log10 threshold (L=1)",
            f"envelope {_fmt(r.threshold_log10)}, fit {_fmt(r.threshold_fit_log10)}, "
            f"theory {_fmt(r.threshold_theory_log10)}",
        ),
        ("q_theory", r.q_theory),
        ("log10(1 - q_theory)", r.q_theory_log10_gap),
        ("log10(1 - q_true)", r.q_true_log10_gap),
        ("q_theory >= q_true", r.q_theory_valid),
        (
            "Nedic-Olshevsky lemma",
            "hypotheses hold" if not r.nedic_olshevsky_outside else "OUTSIDE: " + "; ".join(r.nedic_olshevsky_outside),
        ),
        ("C_theory", r.C_theory),
        ("delta_theory", r.delta_theory),
        ("weight_min", f"{r.weight_min:.6g} (>= delta_theory: {_fmt(r.weight_floor_ok)})"),
        ("period", r.period),
        ("period_product_error", r.period_product_error),
        ("period_product_lambda2", r.period_product_lambda2),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v if isinstance(v, str) else _fmt(v)}" for k, v in rows]
    if r.violations:
        lines.append("violations:")
        lines += [f"  - {v}" for v in r.violations]
    else:
        lines.append("all mixing assumptions hold over the horizon")
    return "\n".join(lines)


def _pattern_edges(P):
    """Off-diagonal positive entries of P as (src, dst) = (column, row) edges
    (int32 below 2^31 vertices: half the memory of the edge caches and unions)."""
    C = sp.coo_array(P)
    keep = (C.row != C.col) & (C.data > 0)
    dt = np.int32 if P.shape[0] < 2**31 else np.int64
    return np.stack([C.col[keep].astype(dt), C.row[keep].astype(dt)], 1)


def _union_graph(N, edge_sets):
    e = np.concatenate(edge_sets) if edge_sets else np.zeros((0, 2), np.int64)
    g = sp.csr_array((np.ones(len(e), dtype=bool), (e[:, 0], e[:, 1])), shape=(N, N))
    g.sum_duplicates()
    return g


def find_B(N, edges_of, horizon, period=None):
    """Smallest B such that every window ``[lB, (l+1)B)`` within the horizon is strongly connected.

    Parameters
    ----------
    N : int
        Number of vertices.
    edges_of : callable
        ``edges_of(k)`` -> ``(m, 2)`` edge array of step k.
    horizon : int
        Steps ``0..horizon-1`` are examined; windows must fit inside.
    period : int, optional
        If given, unions are cached by the set of residues ``k mod period``.

    Returns
    -------
    (B, windows) : (int or None, list of (start, stop))
    """
    cache = {}

    def window_ok(a, b):
        key = frozenset(k % period for k in range(a, b)) if period else None
        if key is not None and key in cache:
            return cache[key]
        ks = sorted(key) if key is not None else range(a, b)
        ok = is_strongly_connected(N, np.concatenate([edges_of(k) for k in ks]))
        if key is not None:
            cache[key] = ok
        return ok

    for B in range(1, horizon + 1):
        windows = [(w * B, (w + 1) * B) for w in range(horizon // B)]
        if all(window_ok(a, b) for a, b in windows):
            return B, windows
    return None, []


#: Above this many vertices the diameter is bounded, not computed exactly:
#: exact all-pairs BFS costs O(N E) per window.
EXACT_DIAMETER_MAX = 2048


def diameter_bounds(g, samples=16, seed=0):
    """Lower and upper bounds on the diameter of a strongly connected digraph, in O(samples * E).

    Lower: the largest out-eccentricity of the sampled vertices. Upper: the
    smallest ``ecc_out(v) + ecc_in(v)`` over them (any path u -> v -> w).
    """
    N = g.shape[0]
    rng = np.random.default_rng(seed)
    src = np.unique(np.concatenate([[0], rng.choice(N, min(samples, N), replace=False)]))
    d_out = shortest_path(g, directed=True, unweighted=True, indices=src)
    d_in = shortest_path(g.T.tocsr(), directed=True, unweighted=True, indices=src)
    ecc_out, ecc_in = d_out.max(axis=1), d_in.max(axis=1)
    if not (np.all(np.isfinite(ecc_out)) and np.all(np.isfinite(ecc_in))):
        return None, None
    return int(ecc_out.max()), int((ecc_out + ecc_in).min())


def diameter(g, chunk=256, vertex_transitive=False):
    """Diameter of a strongly connected digraph given as a sparse adjacency matrix.

    Exact (BFS from every vertex, or from vertex 0 for vertex-transitive
    graphs) up to :data:`EXACT_DIAMETER_MAX` vertices; above, the upper bound
    of :func:`diameter_bounds` (the analysis needs an upper bound on Delta).
    """
    N = g.shape[0]
    if N == 1:
        return 0
    if N > EXACT_DIAMETER_MAX and not vertex_transitive:
        return diameter_bounds(g)[1]
    sources = [0] if vertex_transitive else range(N)
    best = 0
    src = np.asarray(list(sources))
    for i in range(0, len(src), chunk):
        d = shortest_path(g, directed=True, unweighted=True, indices=src[i : i + chunk])
        m = d.max()
        if not np.isfinite(m):
            return None
        best = max(best, int(m))
    return best


def _deviation(V, phi):
    """max_ij |V_ij - phi_i| for a block of columns V (row max and min: no temporaries)."""
    if not V.size:
        return 0.0
    return float(max((V.max(axis=1) - phi).max(), (phi - V.min(axis=1)).max()))


def contraction(matrix_of, N, n_real, horizon, starts, columns, floor=ROUND_OFF_FLOOR):
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
            d = _deviation(V, phis[s + t])
            dev[t] = max(dev[t], d)
            reached[t] = True
            if d < floor:
                break
    return dev[reached] if reached.any() else dev[:0]


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


def fit_contraction(dev, floor=ROUND_OFF_FLOOR):
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


def _sigma2(P, circulant=False):
    """Second largest singular value of a doubly stochastic P, or an upper bound.

    ``sigma_2(P) = ||P - J/N||_2`` for doubly stochastic P. Exact for
    circulant P (the DFT of its first column) and by dense SVD when N <= 512;
    above, the bound ``sqrt(||A||_1 ||A||_inf)`` with
    ``A = P - J/N``, computed in O(nnz). An upper bound only weakens (raises)
    the theoretical q, so q_theory stays a valid statement of the theory.
    """
    N = P.shape[0]
    if N == 1:
        return 0.0
    if circulant:  # singular values of a normal (circulant) matrix: |DFT of column 0|
        col = np.asarray(P[:, [0]].toarray()).ravel()
        return float(np.sort(np.abs(np.fft.fft(col)))[-2])
    if N <= 512:
        A = P.toarray() - 1.0 / N
        return float(np.linalg.norm(A, 2))
    C = sp.coo_array(P)
    dev = np.abs(C.data - 1.0 / N) - 1.0 / N  # correction to the all-1/N baseline
    col = 1.0 + np.bincount(C.col, weights=dev, minlength=N)
    row = 1.0 + np.bincount(C.row, weights=dev, minlength=N)
    return float(math.sqrt(col.max() * row.max()))


def theory_constants(N, B, doubly_stochastic, sigma2_max=None):
    """Nedic-Olshevsky constants (q, C, delta, log10(1 - q)) for N rows and window B.

    Notes
    -----
    THEORY.md section 6 (Nedic and Olshevsky, IEEE TAC 2016): in general
    ``delta >= 1/N^(N B)`` and ``q <= (1 - 1/N^(N B))^(1/B)``; for regular
    (doubly stochastic) schedules ``delta = 1`` and
    ``q <= min((1 - 1/(4 N^3))^(1/B), max_k sigma_2(P^(k)))``. The constant
    ``C = 4`` is our reading of the same lemma and is marked unsure.
    """
    if B is None:
        return None, None, None, None
    if N == 1:
        return 0.0, 4.0, 1.0, None
    if doubly_stochastic:
        x_log10 = -math.log10(4.0) - 3 * math.log10(N)
        delta = 1.0
    else:
        x_log10 = -N * B * math.log10(N)
        delta = 10.0**x_log10 if x_log10 > -300 else 0.0
    if x_log10 > -300:
        x = 10.0**x_log10
        gap = -math.expm1(math.log1p(-x) / B)
        q = 1.0 - gap
        log10_gap = math.log10(gap) if gap > 0 else x_log10 - math.log10(B)
    else:
        q = 1.0
        log10_gap = x_log10 - math.log10(B)
    if doubly_stochastic and sigma2_max is not None and sigma2_max < q:
        q = sigma2_max
        log10_gap = math.log10(1.0 - q) if q < 1 else None
    return q, 4.0, delta, log10_gap


# ---------------------------------------------------------------- rates, envelopes, constants


def log10_gap(q=None, *, log_q=None):
    """``log10(1 - q)`` computed without cancellation, from q or from ``log q``.

    With ``log_q`` (the log of a rate, e.g. a Lyapunov exponent) the gap is
    ``-expm1(log_q)``, exact even when ``q`` itself rounds to 1.0. Returns
    ``-inf`` for ``q >= 1`` (no contraction) and 0.0 for ``q = 0``.

    Examples
    --------
    >>> round(log10_gap(0.9), 12)
    -1.0
    >>> round(log10_gap(log_q=-1e-200), 6)
    -200.0
    """
    if log_q is None:
        if q is None:
            raise ValueError("q or log_q must be given, got neither")
        q = float(q)
        if q >= 1.0:
            return -math.inf
        if q <= 0.0:
            return 0.0
        log_q = math.log(q)
    log_q = float(log_q)
    if log_q >= 0.0:
        return -math.inf
    return math.log10(-math.expm1(log_q))


def _as_schedule(source, tau, delay, seed, weights):
    if isinstance(source, MixingSchedule):
        if tau not in (0, source.tau):
            raise ValueError(f"tau must match the schedule's tau = {source.tau}, got {tau}")
        return source
    check_choice("weights", weights, ("push", "metropolis"))
    return mixing_schedule(source, weights=weights, tau=tau, delay=delay, seed=seed, validate=False)


@dataclasses.dataclass(frozen=True)
class LyapunovRate:
    """Top Lyapunov exponent of the products on the disagreement subspace, as a per-step rate.

    Attributes
    ----------
    rate : float
        ``exp(lambda)``, lambda the mean log growth per step of one zero-sum
        vector propagated with renormalisation (after ``burn_in`` steps).
    interval : list of float
        95% interval ``[exp(lo), exp(hi)]`` of the rate, from the spread of
        the per-segment exponents (Student t over ``segments`` batches).
    exponent : float
        lambda itself (``log rate``), so that ``1 - rate`` is known exactly.
    log10_gap : float
        ``log10(1 - rate)`` computed from lambda (``-expm1``), exact near 1.
    segment_rates : list of float
        Per-segment rates ``exp(mean log growth)``.
    steps, burn_in, segment_length : int
        Steps propagated, steps discarded, steps per segment (a multiple of
        the period for periodic schedules).
    """

    rate: float
    interval: list
    exponent: float
    log10_gap: float
    segment_rates: list
    steps: int
    burn_in: int
    segment_length: int

    def to_dict(self):
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _lyapunov(matrix_of, N, steps, segments, burn_in, period, rng):
    """Core of :func:`lyapunov_rate` on a ``matrix_of(k)`` callable."""
    if N == 1:
        return LyapunovRate(0.0, [0.0, 0.0], -math.inf, 0.0, [0.0] * segments, steps, burn_in, 0)
    v = rng.standard_normal(N)
    v -= v.mean()
    v /= np.linalg.norm(v)
    logs = np.empty(steps)
    for k in range(steps):
        v = matrix_of(k) @ v
        # the zero-sum subspace is invariant; removing the mean only removes round-off,
        # which would otherwise grow along the consensus direction (eigenvalue 1)
        v -= v.mean()
        nv = float(np.linalg.norm(v))
        if nv > 0:
            logs[k] = math.log(nv)
            v /= nv
        else:  # exact annihilation (finite-time consensus): restart from a fresh vector
            logs[k] = -math.inf
            v = rng.standard_normal(N)
            v -= v.mean()
            v /= np.linalg.norm(v)
    usable = steps - burn_in
    seg = usable // segments
    if period and seg:
        seg = max(period, seg // period * period)
    m = min(segments, usable // seg) if seg else 0
    if m < 2:
        raise ValueError(
            "steps must leave at least 2 segments (and one step per segment, whole periods) after burn_in, "
            f"got steps = {steps}, "
            f"burn_in = {burn_in}, segments = {segments}, period = {period}"
        )
    block = logs[burn_in : burn_in + m * seg].reshape(m, seg)
    seg_exp = block.mean(axis=1)
    lam = float(seg_exp.mean())
    if not np.isfinite(lam):
        finite = seg_exp[np.isfinite(seg_exp)]
        hi = float(np.exp(finite.max())) if finite.size else 0.0
        return LyapunovRate(0.0, [0.0, hi], -math.inf, 0.0, np.exp(seg_exp).tolist(), steps, burn_in, seg)
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.975, m - 1) * seg_exp.std(ddof=1) / math.sqrt(m))
    return LyapunovRate(
        rate=math.exp(lam),
        interval=[math.exp(lam - half), math.exp(lam + half)],
        exponent=lam,
        log10_gap=log10_gap(log_q=lam),
        segment_rates=np.exp(seg_exp).tolist(),
        steps=steps,
        burn_in=burn_in,
        segment_length=seg,
    )


def lyapunov_rate(source, *, tau=0, delay="fixed", steps=2000, segments=10, burn_in=None, seed=0, weights="push"):
    """Per-step rate of the products ``P^(k:0)`` on the disagreement subspace (top Lyapunov exponent).

    One random zero-sum vector is propagated, ``v <- P^(k) v``, its mean
    removed (the zero-sum subspace is invariant; this only removes round-off)
    and renormalised each step; the log growth factors are averaged over
    ``segments`` consecutive batches after a burn-in, giving the exponent
    lambda, the rate ``exp(lambda)`` and a 95% interval from the batches.

    Parameters
    ----------
    source : Topology, MixingSchedule, matrix, or list of matrices
    tau : int
        Maximum delay (the rate is then that of the augmented matrices).
    delay : {"fixed", "random"}, DelayModel or matrix
    steps : int
        Steps propagated (>= 2 segments after burn-in).
    segments : int
        Number of batches for the interval (>= 2).
    burn_in : int, optional
        Steps discarded while the vector aligns; default ``steps // 10``.
    seed : int
        Seed of the start vector (and of random delays).
    weights : {"push", "metropolis"}

    Returns
    -------
    LyapunovRate

    Notes
    -----
    For a periodic schedule lambda equals ``log(rho)/period`` with rho the
    spectral radius of the period product on the zero-sum subspace (see
    :func:`exact_rate`); segments are whole periods. For a random (ergodic)
    schedule lambda is almost surely the same for every realisation, so a
    different topology seed is an independent estimate. The interval treats
    the batches as independent; it reflects ``steps``.

    Examples
    --------
    >>> import sgpverify as sv
    >>> r = lyapunov_rate(sv.graphs.ring(8), steps=400)
    >>> abs(r.rate - 0.9238795325) < 1e-6       # cos(pi/8): the ring's |lambda_2|
    True
    >>> r.interval[0] <= r.rate <= r.interval[1]
    True
    """
    steps = check_int("steps", steps, min_value=4)
    segments = check_int("segments", segments, min_value=2)
    burn_in = steps // 10 if burn_in is None else check_int("burn_in", burn_in, min_value=0, max_value=steps - 2)
    S = _as_schedule(source, tau, delay, seed, weights)
    return _lyapunov(S.matrix, S.N, steps, segments, burn_in, S.period, rng_for(seed, "columns", 7919))


@dataclasses.dataclass(frozen=True)
class ExactRate:
    """Asymptotic per-step rate of a periodic schedule.

    Attributes
    ----------
    rate : float
        ``rho ** (1 / period)``.
    rho : float
        Spectral radius of the period product ``Pi = P^(p-1) ... P^(0)``
        restricted to the disagreement (zero-sum) subspace, i.e. of
        ``Pi (I - 1 1^T / N)`` (the consensus direction deflated).
    period : int
    log10_gap : float
        ``log10(1 - rate)`` from ``log(rho) / period``, exact near 1.
    method : str
        ``"circulant-fft"``, ``"dense"`` or ``"arpack"``.
    """

    rate: float
    rho: float
    period: int
    log10_gap: float
    method: str

    def to_dict(self):
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


#: Above this many rows :func:`exact_rate` uses ARPACK on a LinearOperator.
EXACT_DENSE_MAX = 512


def _exact_rho(mats, N, circulant=False, dense_max=EXACT_DENSE_MAX, deflate=True):
    """(rho, method) of ``Pi (I - J/N)`` from one period of sparse matrices."""
    if N == 1:
        return 0.0, "dense"
    if circulant:  # each P^(k) circulant: the product's eigenvalues multiply mode by mode
        lam = np.ones(N, dtype=complex)
        for P in mats:
            lam *= np.fft.fft(np.asarray(P[:, [0]].toarray()).ravel())
        rho = float(np.abs(lam[1:] if deflate else lam).max())
        # the eigenvalues of normal matrices come out within a few eps: below that the
        # product is 0 (finite-time consensus), and rho ** (1 / period) would turn the
        # round-off into a rate (2.4e-17 -> q = 4.9e-9 for exponential(6, peers=3))
        return (0.0 if rho <= 64 * EPS else rho), "circulant-fft"

    def apply(V):
        if deflate:
            V = V - V.mean(axis=0)
        for P in mats:
            V = P @ V
        return V

    if N <= dense_max:
        Pi = apply(np.eye(N))
        # a product that vanishes within a few periods (finite-time consensus) is
        # nilpotent: its computed eigenvalues are round-off of size eps^(1/m) for a
        # Jordan block of size m (1e-8 for m = 2), not a rate; as on the arpack path
        M = Pi
        for _ in range(3):
            if np.abs(M).max() <= 64 * EPS:
                return 0.0, "dense"
            M = apply(M)
        ev = np.linalg.eigvals(Pi)
        return float(np.abs(ev).max()), "dense"
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigs

    op = LinearOperator((N, N), matvec=lambda v: apply(np.asarray(v, dtype=float).reshape(N, 1)).ravel(), dtype=float)
    v0 = rng_for(0, "columns", 7907).standard_normal(N)
    probe = apply(v0.reshape(N, 1)).ravel()
    for _ in range(3):  # nilpotent (finite-time consensus) products vanish in a few periods
        if np.linalg.norm(probe) <= 64 * EPS * np.linalg.norm(v0):
            return 0.0, "arpack"
        probe = apply(probe.reshape(N, 1)).ravel()
    try:
        k = min(6, N - 2)
        # a wider Krylov space (ncv 40 instead of 2k + 1) converges in far fewer products on
        # clustered spectra (exponential(4096), tau = 1: ~230 period products instead of thousands)
        ev = eigs(
            op,
            k=k,
            which="LM",
            tol=0,
            v0=v0,
            ncv=min(N - 1, max(2 * k + 1, 40)),
            return_eigenvectors=False,
            maxiter=20 * N,
        )
    except ArpackNoConvergence as exc:  # pragma: no cover - reported by its partial answer
        ev = exc.eigenvalues
        if not len(ev):
            raise
    return float(np.abs(ev).max()), "arpack"


def exact_rate(source, *, tau=0, delay="fixed", seed=None, weights="push", dense_max=EXACT_DENSE_MAX):
    """Exact asymptotic per-step rate of a periodic schedule (with or without delays).

    ``rate = rho(Pi restricted to the zero-sum subspace) ** (1 / period)``: the
    consensus direction is deflated by applying ``Pi`` to ``v - mean(v)``, so
    the product's eigenvalue 1 (left eigenvector ``1``) is replaced by 0 and
    every other eigenvalue kept. Dense eigenvalues for ``N <= dense_max``;
    above, ARPACK (``scipy.sparse.linalg.eigs``) on a ``LinearOperator``
    applying the period's sparse steps, never an ``N x N`` product. Circulant
    schedules (offset topologies without delays) multiply the DFTs of the
    steps' first columns.

    Parameters
    ----------
    source : Topology, MixingSchedule, matrix, or list of matrices
        A periodic schedule (``period`` not None).
    tau, delay, seed, weights
        As for :func:`check_mixing`; random delays make a schedule aperiodic.
    dense_max : int
        Largest ``N = n (tau + 1)`` handled by dense eigenvalues.

    Returns
    -------
    ExactRate

    Raises
    ------
    ValueError
        If the schedule is not periodic.

    Examples
    --------
    >>> import sgpverify as sv
    >>> r = exact_rate(sv.graphs.exponential(16), tau=1)
    >>> round(r.rho, 5), round(r.rate, 5), r.period, r.method
    (0.45106, 0.81952, 4, 'dense')
    >>> exact_rate(sv.graphs.exponential(16)).rate < 1e-3   # exact average every 4 steps
    True
    """
    dense_max = check_int("dense_max", dense_max, min_value=0)
    S = _as_schedule(source, tau, delay, seed, weights)
    if S.period is None:
        raise ValueError(f"source must be a periodic schedule for exact_rate, got period None ({S.name})")
    mats = [S.matrix(k) for k in range(S.period)]
    circulant = isinstance(source, PeriodicTopology) and source.offsets is not None and S.tau == 0
    rho, method = _exact_rho(mats, S.N, circulant, dense_max)
    rate = rho ** (1.0 / S.period)
    gap = log10_gap(log_q=math.log(rho) / S.period) if rho > 0 else 0.0
    return ExactRate(rate=rate, rho=rho, period=S.period, log10_gap=gap, method=method)


def rate_bound_valid(bound_log10_gap, true_log10_gap, N=1, q_atol=None):
    """Whether a rate bound q_bound is at least the true rate, compared as ``log10(1 - q)``.

    ``q_bound >= q_true`` iff ``log10(1 - q_bound) <= log10(1 - q_true)``; in
    log space the comparison stays exact when both q round to 1.0 (where
    ``q <= q_bound`` in floating point is vacuous). One-sided, allowing an
    absolute error ``q_atol`` on the computed true rate (default
    ``64 N eps``, the round-off of an eigenvalue of an N-row product).

    Examples
    --------
    >>> rate_bound_valid(-174.3, -0.46)        # Nedic-Olshevsky vs random-peer n = 16
    True
    >>> rate_bound_valid(-0.40, -0.46)         # a bound faster than the true rate
    False
    >>> rate_bound_valid(-100.0, -200.0, q_atol=0)   # both q round to 1.0, still decided
    False
    """
    if bound_log10_gap is None or true_log10_gap is None:
        return None
    if not math.isfinite(true_log10_gap):  # no contraction: no q < 1 bounds it
        return bool(bound_log10_gap == -math.inf)
    q_atol = 64 * EPS * N if q_atol is None else float(q_atol)
    tol = q_atol / (math.log(10) * 10.0**true_log10_gap)
    return bool(bound_log10_gap <= true_log10_gap + tol)


def validate_envelope(dev, C, q, floor=ROUND_OFF_FLOOR):
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


def envelope(dev, q_lower, floor=ROUND_OFF_FLOOR):
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


@dataclasses.dataclass(frozen=True)
class EffectiveStep:
    """The step a node's de-biased iterate takes, ``gamma / weight_min``, against ``1 / L``.

    Unpacks as ``(step, ok)``.
    """

    step: float
    limit: float
    ok: bool

    def __iter__(self):
        return iter((self.step, self.ok))

    def to_dict(self):
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def effective_step(gamma, weight_min, L):
    """Effective step ``gamma / weight_min`` and whether it stays <= ``1 / L``.

    The de-biased iterate ``z_i = x_i / w_i`` moves by ``gamma g_i / w_i``: a
    push-sum weight ``w_i`` below 1 amplifies the step. The descent step of
    the analysis needs ``gamma <= 1/L``; with weights it is the effective step
    that must satisfy it (a step stable on a doubly stochastic schedule,
    where ``w = 1``, can diverge on random-peer, whose weights reach ~6e-4 at
    n = 16).

    Examples
    --------
    >>> step, ok = effective_step(0.05, 1.0, 1.0)
    >>> step, ok
    (0.05, True)
    >>> effective_step(0.05, 6e-4, 1.0).ok
    False
    """
    from ._validate import check_float

    gamma = check_float("gamma", gamma, low=0, low_open=True)
    weight_min = check_float("weight_min", weight_min, low=0, low_open=True)
    L = check_float("L", L, low=0, low_open=True)
    step = gamma / weight_min
    return EffectiveStep(step=step, limit=1.0 / L, ok=bool(step <= 1.0 / L))


def weight_floor_ok(weight_min, delta, horizon=1):
    """``weight_min >= delta`` up to the round-off of ``horizon`` weight updates.

    Examples
    --------
    >>> weight_floor_ok(1.0 - 2e-16, 1.0, horizon=10)
    True
    >>> weight_floor_ok(6e-4, 1.0)    # the regular-graph floor on a column-stochastic schedule
    False
    """
    if weight_min is None or delta is None:
        return None
    return bool(weight_min >= delta * (1.0 - 64 * EPS * max(1, horizon)))


@dataclasses.dataclass(frozen=True)
class Threshold:
    """Known part of Theorem 1's threshold, ``max(n L^4 C^4 60^2 / (1 - q)^4, n)``.

    ``value`` is ``inf`` when it overflows; ``log10`` is exact in log space
    (from ``log10(1 - q)``) even when ``q`` rounds to 1.
    """

    value: float
    log10: float

    def to_dict(self):
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _threshold_log10(C, q, n, L, log10_gap_q=None):
    """log10 of ``max(n L^4 C^4 60^2 / (1 - q)^4, n)`` from ``log10(1 - q)`` (no sympy: fast)."""
    if log10_gap_q is None:
        log10_gap_q = log10_gap(q)
    if C <= 0:
        return math.log10(n)
    if not math.isfinite(log10_gap_q):
        return math.inf
    return max(
        math.log10(n) + 4 * math.log10(L) + 4 * math.log10(C) + 2 * math.log10(60) - 4 * log10_gap_q, math.log10(n)
    )


def theorem1_threshold(C, q, n, L, *, log10_gap_q=None):
    """The known part of Theorem 1's K threshold for the constants ``(C, q)``.

    Evaluates :data:`sgpverify.theory.PUBLISHED_THRESHOLD_KNOWN_PART`
    (``max(n L^4 C^4 60^2 / (1 - q)^4, n)``, a LOWER estimate of the published
    threshold) through :func:`sgpverify.theory.evaluate`, and its log10 from
    ``log10(1 - q)`` (pass ``log10_gap_q`` when q rounds to 1, e.g. the
    Nedic-Olshevsky q).

    Examples
    --------
    >>> t = theorem1_threshold(1.0, 0.5, 16, 1.0)
    >>> t.value, round(t.log10, 6)
    (921600.0, 5.964542)
    >>> theorem1_threshold(4.0, 1.0, 16, 1.0, log10_gap_q=-100.0).log10 > 400
    True
    """
    from . import theory

    lg = _threshold_log10(C, q, n, L, log10_gap_q)
    if lg < 300 and q < 1:
        value = float(theory.evaluate(theory.PUBLISHED_THRESHOLD_KNOWN_PART, n=n, L=L, C=C, q=q))
    else:
        value = math.inf
    return Threshold(value=value, log10=lg)


@dataclasses.dataclass(frozen=True)
class NedicOlshevsky:
    """Nedic-Olshevsky constants (THEORY.md section 6) and their hypotheses.

    Attributes
    ----------
    C, q, delta : float
        ``C = 4`` [unsure], q (1.0 when it rounds), the weight floor delta.
    log10_gap : float
        ``log10(1 - q)``, exact when q rounds to 1.
    hypotheses : tuple of str
        What the lemma assumes of the matrices.
    """

    C: float
    q: float
    delta: float
    log10_gap: float
    hypotheses: tuple = ()

    def to_dict(self):
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


#: The hypotheses of Nedic and Olshevsky's lemma (IEEE TAC 2016) on the matrices P^(k).
NEDIC_OLSHEVSKY_HYPOTHESES = (
    "every P^(k) is column-stochastic and non-negative",
    "every P^(k) has a positive diagonal (each node keeps a share of its own mass)",
    "positive entries are bounded below uniformly (weights 1/out-degree: >= 1/N)",
    "B-strong connectivity: every window union of B consecutive graphs is strongly connected",
)


def nedic_olshevsky_constants(n, B, *, doubly_stochastic=False, sigma2_max=None):
    """Nedic-Olshevsky's ``(C, q, log10(1 - q))`` and weight floor for ``n`` rows and window ``B``.

    In general ``delta = n^(-n B)`` and ``q = (1 - n^(-n B))^(1/B)``; for
    doubly stochastic (regular) schedules ``delta = 1`` and
    ``q = min((1 - 1/(4 n^3))^(1/B), max_k sigma_2(P^(k)))``; ``C = 4``.

    Notes
    -----
    Hypotheses of the lemma (:data:`NEDIC_OLSHEVSKY_HYPOTHESES`): column
    stochastic with a positive diagonal, a uniform lower bound on positive
    entries, B-strong connectivity. Delay-augmented matrices (THEORY.md
    section 3) have a ZERO diagonal on their buffer rows, so for tau > 0
    they fall outside the lemma: the constants are then evaluated for
    ``N = n (tau + 1)`` as a reading of the paper's construction, not as a
    consequence of the lemma (see :func:`nedic_olshevsky_hypotheses`).

    Examples
    --------
    >>> r = nedic_olshevsky_constants(3, 2)
    >>> r.C, round(r.delta, 12), round(r.log10_gap, 6)
    (4.0, 0.001371742112, -3.163609)
    >>> nedic_olshevsky_constants(16, 4).q      # rounds to 1; the gap does not
    1.0
    >>> round(nedic_olshevsky_constants(16, 4).log10_gap, 3)
    -77.666
    """
    n = check_int("n", n, min_value=1)
    B = check_int("B", B, min_value=1)
    q, C, delta, gap = theory_constants(n, B, doubly_stochastic, sigma2_max)
    if gap is None:
        gap = 0.0 if q == 0 else -math.inf
    return NedicOlshevsky(C=C, q=q, delta=delta, log10_gap=gap, hypotheses=NEDIC_OLSHEVSKY_HYPOTHESES)


def nedic_olshevsky_hypotheses(report):
    """Which of the lemma's hypotheses a :class:`MixingReport` breaks; empty when all hold.

    Examples
    --------
    >>> import sgpverify as sv
    >>> nedic_olshevsky_hypotheses(sv.check_mixing(sv.graphs.exponential(8), horizon=12))
    []
    >>> nedic_olshevsky_hypotheses(sv.check_mixing(sv.graphs.exponential(8), tau=1, horizon=12))
    ['positive diagonal: the delay-augmented matrices have a zero diagonal on their 8 buffer rows']
    """
    out = []
    if not (report.column_stochastic and report.nonnegative):
        out.append("column-stochastic and non-negative: violated (see violations)")
    if report.tau > 0:
        out.append(
            f"positive diagonal: the delay-augmented matrices have a zero diagonal on their "
            f"{report.rows - report.n} buffer rows"
        )
    elif not report.positive_self_weights:
        out.append(f"positive diagonal: min self weight {report.min_self_weight:.3g}")
    if report.B is None:
        out.append("B-strong connectivity: no window length works over the horizon")
    return out


def deviation_series(matrix_of, N, n_real, starts, columns, max_len, horizon=None, floor=ROUND_OFF_FLOOR):
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
            d = _deviation(V, phi)
            dev[t] = max(dev[t], d)
            reached[t] = True
            if horizon is not None and s + t < horizon:
                dev_h[t] = max(dev_h[t], d)
                reached_h[t] = True
            if d < floor:
                break
    return dev[reached], dev_h[reached_h]


#: Memory that :func:`check_mixing` spends on keeping the matrices of an
#: aperiodic schedule (the first steps asked for); later ones are rebuilt.
MATRIX_CACHE_BYTES = 128 << 20

#: Memory of the block of tracked product columns (float64, ``N x columns``)
#: that :func:`check_mixing` may use by default: the default 256 columns are
#: cut to fit above ``N = 131072`` (at ``N = 10**6``: 33 columns, 264 MB; the
#: product being formed holds a second block of that size).
CONTRACTION_BLOCK_BYTES = 256 << 20

#: Memory that :func:`check_mixing` spends on keeping the edge arrays of the
#: steps it examines for B and the diameter (the first steps asked for);
#: later ones are rebuilt from their matrices.
EDGE_CACHE_BYTES = 256 << 20


class _BudgetCache:
    """``build(k)``, kept for the keys first asked for while their total size
    (``nbytes(value)``) fits ``budget`` bytes, rebuilt for the others.
    ``key(k)`` maps a step to its cache key (default: the step itself)."""

    def __init__(self, build, budget, nbytes, key=None):
        self.build, self.budget, self.nbytes, self.key = build, budget, nbytes, key
        self.store, self.used = {}, 0

    def __call__(self, k):
        kk = k if self.key is None else self.key(k)
        v = self.store.get(kk)
        if v is None:
            v = self.build(k)
            b = self.nbytes(v)
            if self.used + b <= self.budget:
                self.store[kk] = v
                self.used += b
        return v

    def clear(self):
        """Drop what is kept (the budget stays spent: nothing more is kept)."""
        self.store.clear()


def default_columns(N):
    """Number of product columns :func:`check_mixing` tracks by default: all
    up to 512 rows, else 256, fewer when ``N x 256`` float64 would exceed
    :data:`CONTRACTION_BLOCK_BYTES` (never fewer than 16).

    >>> default_columns(512), default_columns(4096), default_columns(10**6)
    (512, 256, 33)
    """
    if N <= 512:
        return N
    return int(min(256, max(16, CONTRACTION_BLOCK_BYTES // (8 * N))))


def check_mixing(
    source,
    tau=0,
    delay="fixed",
    horizon=100,
    seed=None,
    *,
    weights="push",
    strict=False,
    atol=None,
    columns=None,
    starts=4,
    envelope_horizon=None,
    lyapunov_steps=2000,
    lyapunov_segments=10,
):
    """Measure the mixing assumptions of a schedule over a finite horizon.

    Parameters
    ----------
    source : Topology, MixingSchedule, matrix, or list of matrices
        What to check (see :func:`sgpverify.mixing.mixing_schedule`).
    tau : int
        Maximum message delay; with ``tau > 0`` every quantity is measured on
        the delay-augmented matrices of ``n (tau + 1)`` rows.
    delay : {"fixed", "random"}, DelayModel or matrix
        Delay model when ``tau > 0``.
    horizon : int
        Number of steps examined (>= 1).
    seed : int, optional
        Seed for random delays and for the choice of tracked columns.
    weights : {"push", "metropolis"}
        Weights for a topology.
    strict : bool
        Raise :class:`MixingAssumptionError` if any assumption is violated.
    atol : float, optional
        Tolerance on column sums; default scales with eps and column size.
    columns : int, optional
        Number of product columns tracked for C and q: by default all when
        rows <= 512, else 256 chosen at random (seeded), fewer above 131072
        rows so that the block fits :data:`CONTRACTION_BLOCK_BYTES` (see
        :func:`default_columns`; the report's ``contraction_columns`` says
        how many).
    starts : int
        Number of start steps s for the products (spread over the first half).
    envelope_horizon : int, optional
        Largest product length measured for the envelope ``(C, q)``. Default:
        follow each start until its deviation reaches the round-off floor, at
        most ``max(10 * horizon, 1000)`` product lengths.
    lyapunov_steps, lyapunov_segments : int
        Steps and batches of :func:`lyapunov_rate` (its interval reflects them).

    Returns
    -------
    MixingReport

    Examples
    --------
    >>> import sgpverify as sv
    >>> r = sv.check_mixing(sv.graphs.exponential(16), horizon=40)
    >>> r.B, r.diameter, r.period, r.period_product_error < 1e-12
    (4, 4, 4, True)
    >>> r.passed
    True
    """
    horizon = check_int("horizon", horizon, min_value=1)
    starts = check_int("starts", starts, min_value=1)
    if isinstance(source, MixingSchedule):
        S = source
        if tau not in (0, S.tau):
            raise ValueError(f"tau must match the schedule's tau = {S.tau}, got {tau}")
    else:
        check_choice("weights", weights, ("push", "metropolis"))
        S = mixing_schedule(source, weights=weights, tau=tau, delay=delay, seed=seed, validate=False)
    n, N, period = S.n, S.N, S.period
    if period is None:  # aperiodic: build each P^(k) once for this check (memory permitting)
        # beyond the budget a matrix is rebuilt when asked again: the same matrix (random
        # schedules are seeded by step)
        matrix_of = _BudgetCache(
            S.matrix,
            MATRIX_CACHE_BYTES,
            lambda P: sum(getattr(getattr(P, a, None), "nbytes", 0) for a in ("data", "indices", "indptr")),
        )
    else:
        matrix_of = S.matrix  # periodic schedules cache a period themselves

    # per-step facts (each distinct matrix once)
    distinct = range(min(horizon, period)) if period is not None else range(horizon)
    col_err, tol_used, min_entry, min_pos, min_self = 0.0, 0.0, np.inf, np.inf, np.inf
    doubly = True
    violations = []
    first = {}
    for k in distinct:
        P = matrix_of(k)
        tol = column_sum_tolerance(P) if atol is None else float(atol)
        tol_used = max(tol_used, tol)
        colsum = np.asarray(P.sum(axis=0)).ravel()
        err = np.abs(1.0 - colsum)
        j = int(np.argmax(err))
        if err[j] > col_err:
            col_err = float(err[j])
        if err[j] > tol and "col" not in first:
            first["col"] = (
                f"column {j} of P^({k}) sums to {colsum[j]:.15g} (|1 - sum| = {err[j]:.1e} > atol = {tol:.1e})"
            )
        data = P.data
        if data.size:
            m = float(data.min())
            if m < min_entry:
                min_entry = m
            if m < 0 and "neg" not in first:
                C = sp.coo_array(P)
                i = int(np.argmin(C.data))
                first["neg"] = f"P^({k})[{C.row[i]}, {C.col[i]}] = {C.data[i]:.3g} is negative"
            pos = data[data > 0]
            if pos.size:
                min_pos = min(min_pos, float(pos.min()))
        d = P.diagonal()[:n]
        i = int(np.argmin(d))
        if d[i] < min_self:
            min_self = float(d[i])
        if d[i] <= 0 and "self" not in first:
            first["self"] = f"P^({k})[{i}, {i}] = {d[i]:.3g}: self-weights must be > 0"
        if doubly:
            rows_sum = np.asarray(P.sum(axis=1)).ravel()
            doubly = bool(np.max(np.abs(rows_sum - 1.0)) <= max(tol, column_sum_tolerance(P.T)))
    violations += list(first.values())

    # B and diameter
    edges_of = _BudgetCache(
        lambda k: _pattern_edges(matrix_of(k)),
        EDGE_CACHE_BYTES,
        lambda e: e.nbytes,
        key=(lambda k: k % period) if period is not None else None,
    )

    # circulant schedules (i -> i + offset for every node): every matrix and
    # product is circulant, so one column and one BFS source tell everything
    circulant = isinstance(source, PeriodicTopology) and source.offsets is not None and tau == 0
    B, windows = find_B(N, edges_of, horizon, period)
    diam = None
    if B is not None:
        transitive = circulant
        seen = {}
        diam = 0
        for a, b in windows:
            key = frozenset(k % period for k in range(a, b)) if period else (a, b)
            if key in seen:
                continue
            ks = sorted(key) if period else range(a, b)
            g = _union_graph(N, [edges_of(k) for k in ks])
            seen[key] = diameter(g, vertex_transitive=transitive)
            diam = max(diam, seen[key])
    else:
        violations.append(
            f"no window length B <= horizon = {horizon} makes every window's union graph strongly connected"
        )

    # the contraction needs the memory: drop the edges and the last union graph
    edges_of.clear()
    g = None

    # contraction of products
    rng = rng_for(seed, "columns")
    if columns is None and circulant:
        cols = np.array([0])
    elif columns is None:
        m = default_columns(N)
        cols = np.arange(N) if m >= N else np.sort(rng.choice(N, m, replace=False))
    else:
        m = check_int("columns", columns, min_value=1)
        cols = np.arange(N) if m >= N else np.sort(rng.choice(N, m, replace=False))
    start_list = sorted({int(s) for s in np.linspace(0, max(0, (horizon - 1) // 2), starts)})
    if envelope_horizon is None:
        max_len = max(10 * horizon, 1000)
    else:
        max_len = check_int("envelope_horizon", envelope_horizon, min_value=horizon)
    dev_env, dev = deviation_series(matrix_of, N, n, start_list, cols, max_len, horizon)
    q_fit, C_fit, window = fit_contraction(dev)

    # rates: exact for periodic schedules, Lyapunov for every schedule
    lyap_steps = check_int("lyapunov_steps", lyapunov_steps, min_value=4)
    lyap = _lyapunov(
        matrix_of if period is not None else S.matrix,
        N,
        lyap_steps,
        check_int("lyapunov_segments", lyapunov_segments, min_value=2),
        lyap_steps // 10,
        period,
        rng_for(seed, "columns", 7919),
    )
    q_exact = q_exact_method = None
    exact_log_q = None
    if period is not None:
        rho, q_exact_method = _exact_rho([matrix_of(k) for k in range(period)], N, circulant)
        q_exact = rho ** (1.0 / period)
        exact_log_q = math.log(rho) / period if rho > 0 else -math.inf
        q_lo, q_source = q_exact, "exact"
    else:
        q_lo, q_source = lyap.interval[1], "lyapunov-upper"
    Cm, q = envelope(dev_env, q_lo)
    env_ratio = validate_envelope(dev_env, Cm, q)
    fit_ratio = validate_envelope(dev_env, C_fit, q_fit)
    reaches = bool(dev_env.size < max_len or (dev_env.size and dev_env[-1] < ROUND_OFF_FLOOR))
    over_fit = dev_env.size / (window[1] + 1) if window else None
    if q >= 1.0:
        violations.append(f"products do not contract: rate q = {q:.6g} >= 1 ({q_source})")

    # push-sum weights from w = 1 on real rows
    w = np.zeros(N)
    w[:n] = 1.0
    wmin = 1.0
    for k in range(horizon):
        w = matrix_of(k) @ w
        wmin = min(wmin, float(w[:n].min()))

    # period product
    ppe = lam2 = None
    if period is not None and period <= horizon:
        pcols = np.array([0]) if circulant else (np.arange(N) if N <= 4096 else cols)
        ppe = 0.0
        blocks = []
        chunk = 512
        mean_col = np.zeros(N)
        u = np.full(N, 1.0 / N)
        for k in range(period):
            u = matrix_of(k) @ u
        mean_col = u  # Pi @ (1/N) 1: the mean column of Pi
        for c0 in range(0, len(pcols), chunk):
            c = pcols[c0 : c0 + chunk]
            V = np.zeros((N, len(c)))
            V[c, np.arange(len(c))] = 1.0
            for k in range(period):
                V = matrix_of(k) @ V
            ppe = max(ppe, _deviation(V, mean_col))
            if N <= 1024 or circulant:
                blocks.append(V)
        if circulant:  # eigenvalues of a circulant: the DFT of its first column
            ev = np.sort(np.abs(np.fft.fft(blocks[0][:, 0])))[::-1]
            lam2 = float(ev[1]) if N > 1 else 0.0
        elif N <= 1024:
            Pi = np.concatenate(blocks, axis=1)
            ev = np.sort(np.abs(np.linalg.eigvals(Pi)))[::-1]
            lam2 = float(ev[1]) if N > 1 else 0.0

    sig = None
    if doubly and B is not None and N > 1:
        ks = range(min(horizon, period, 64)) if period else range(min(horizon, 64))
        sig = max(_sigma2(matrix_of(k), circulant) for k in ks)
    q_th, C_th, delta_th, th_gap = theory_constants(N, B, doubly, sig)
    if exact_log_q is not None:
        true_gap = log10_gap(log_q=exact_log_q) if exact_log_q > -math.inf else 0.0
    else:
        true_gap = lyap.log10_gap
    if q_th is None:
        th_valid = None
    elif q_th == 0.0:
        th_valid = bool(true_gap == 0.0)
    else:
        th_valid = rate_bound_valid(th_gap, true_gap, N)

    def inv_gap(qq):
        return 1.0 / (1.0 - qq) if qq < 1.0 else math.inf

    def thr(Cc, qq, gap=None):
        if Cc is None or qq is None:
            return None
        return _threshold_log10(Cc, qq, n, 1.0, gap)  # = theorem1_threshold(...).log10 (tested)

    report = MixingReport(
        topology=S.name,
        n=n,
        tau=S.tau,
        rows=N,
        horizon=horizon,
        delay=S.model.name if S.model is not None else None,
        column_stochastic="col" not in first,
        column_sum_error=col_err,
        atol=tol_used,
        nonnegative="neg" not in first,
        positive_self_weights="self" not in first,
        min_self_weight=min_self,
        min_positive_entry=min_pos,
        doubly_stochastic=doubly,
        B=B,
        diameter=diam,
        diameter_exact=bool(circulant or N <= EXACT_DIAMETER_MAX),
        q=q,
        C=Cm,
        q_source=q_source,
        q_fit=q_fit,
        C_fit=C_fit,
        q_fit_window=list(window) if window else None,
        q_exact=q_exact,
        q_exact_method=q_exact_method,
        q_lyapunov=lyap.rate,
        q_lyapunov_interval=list(lyap.interval),
        envelope_horizon=int(dev_env.size),
        envelope_reaches_floor=reaches,
        envelope_horizon_over_fit=over_fit,
        envelope_horizon_ok=bool(reaches or (over_fit is not None and over_fit >= 10)),
        envelope_worst_ratio=env_ratio,
        fit_envelope_worst_ratio=fit_ratio,
        q_fit_below_true=bool(q_fit < (q_exact if q_exact is not None else lyap.interval[0])),
        one_over_one_minus_q=inv_gap(q),
        one_over_one_minus_q_fit=inv_gap(q_fit),
        threshold_log10=thr(Cm, q),
        threshold_fit_log10=thr(C_fit, q_fit),
        threshold_theory_log10=thr(C_th, q_th, th_gap),
        contraction_starts=len(start_list),
        contraction_columns=len(cols),
        q_theory=q_th,
        C_theory=C_th,
        delta_theory=delta_th,
        q_theory_log10_gap=th_gap,
        q_true_log10_gap=true_gap,
        q_theory_valid=th_valid,
        nedic_olshevsky_outside=[],
        weight_min=wmin,
        weight_floor_ok=weight_floor_ok(wmin, delta_th, horizon),
        period=period,
        period_product_error=ppe,
        period_product_lambda2=lam2,
        violations=tuple(violations),
    )
    report = dataclasses.replace(report, nedic_olshevsky_outside=nedic_olshevsky_hypotheses(report))
    if strict and violations:
        raise MixingAssumptionError(f"{S.name}: " + "; ".join(violations))
    return report


# ---------------------------------------------------------------- the constants side by side (docs/constants.md)

#: Schedules of the constants table: (label, topology name, by_name keywords, tau).
CONSTANTS_FAMILIES = (
    ("exponential", "exponential", {}, 0),
    ("exponential tau=1", "exponential", {}, 1),
    ("exponential tau=2", "exponential", {}, 2),
    ("exponential-bidir", "exponential-bidir", {}, 0),
    ("ring-bidir", "ring-bidir", {}, 0),
    ("torus", "torus", {}, 0),
    ("hypercube", "hypercube", {}, 0),
    ("random-peer", "random-peer", {}, 0),
    ("erdos-renyi p=0.3", "erdos-renyi", {"p": 0.3}, 0),
)


def constants_table(n=16, horizon=100, seed=0, families=CONSTANTS_FAMILIES, lyapunov_steps=4000):
    """The rates and constants of several schedules side by side (fixed delays where tau > 0).

    One row per family: the exact rate (periodic only), the Lyapunov rate
    and interval, the validated envelope, the fitted pair and the
    Nedic-Olshevsky q, each also as ``log10(1 - q)``, the worst ratios of
    both envelopes over the envelope horizon and the log10 Theorem 1
    thresholds at ``L = 1``. This is the experiment ``"constants"`` of
    ``sgpverify run`` (``experiments/constants.toml``) and the table of
    ``docs/constants.md``.

    Examples
    --------
    >>> rows = constants_table(8, horizon=30, lyapunov_steps=200, families=CONSTANTS_FAMILIES[:2])
    >>> [r["family"] for r in rows], rows[0]["q_source"], rows[1]["q"] >= rows[1]["q_exact"]
    (['exponential', 'exponential tau=1'], 'exact', True)
    """
    from . import graphs

    rows = []
    for label, name, kw, tau in families:
        topo = graphs.by_name(name, n, seed=seed, **kw)
        r = check_mixing(topo, tau=tau, horizon=horizon, seed=seed, lyapunov_steps=lyapunov_steps)
        ly = r.q_lyapunov_interval
        rows.append(
            {
                "family": label,
                "topology": r.topology,
                "n": r.n,
                "tau": r.tau,
                "period": r.period,
                "q_exact": r.q_exact,
                "q_lyapunov": r.q_lyapunov,
                "q_lyapunov_interval": list(ly),
                "q": r.q,
                "C": r.C,
                "q_source": r.q_source,
                "q_fit": r.q_fit,
                "C_fit": r.C_fit,
                "q_fit_window": r.q_fit_window,
                "q_theory": r.q_theory,
                "gap_exact": None if r.q_exact is None else r.q_true_log10_gap,
                "gap_lyapunov": log10_gap(r.q_lyapunov),
                "gap_lyapunov_interval": [log10_gap(ly[1]), log10_gap(ly[0])],
                "gap_envelope": log10_gap(r.q),
                "gap_fit": log10_gap(r.q_fit),
                "gap_theory": r.q_theory_log10_gap,
                "envelope_worst_ratio": r.envelope_worst_ratio,
                "fit_envelope_worst_ratio": r.fit_envelope_worst_ratio,
                "envelope_horizon": r.envelope_horizon,
                "envelope_horizon_ok": r.envelope_horizon_ok,
                "q_fit_below_true": r.q_fit_below_true,
                "one_over_one_minus_q": r.one_over_one_minus_q,
                "one_over_one_minus_q_fit": r.one_over_one_minus_q_fit,
                "threshold_log10": r.threshold_log10,
                "threshold_fit_log10": r.threshold_fit_log10,
                "threshold_theory_log10": r.threshold_theory_log10,
                "q_theory_valid": r.q_theory_valid,
                "weight_min": r.weight_min,
                "nedic_olshevsky_outside": r.nedic_olshevsky_outside,
            }
        )
    return rows


def format_constants_table(rows):
    """Markdown table of :func:`constants_table` rows."""

    def f(v, spec=".4f"):
        return "-" if v is None else format(v, spec)

    out = [
        "| schedule | q_exact | q_lyapunov [95%] | envelope q, C | fit q, C (window) | fit worst ratio "
        "| 1/(1-q): env / fit | log10 threshold: env / fit / N-O | log10(1-q_theory) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["q_lyapunov_interval"]
        w = r["q_fit_window"]
        out.append(
            f"| {r['family']} | {f(r['q_exact'])} | {r['q_lyapunov']:.4f} [{lo:.4f}, {hi:.4f}] "
            f"| {r['q']:.4f}, {r['C']:.3g} | {r['q_fit']:.4f}, {r['C_fit']:.3g} "
            f"({'-' if w is None else f'{w[0]}-{w[1]}'}) "
            f"| {r['fit_envelope_worst_ratio']:.3g} "
            f"| {r['one_over_one_minus_q']:.3f} / {r['one_over_one_minus_q_fit']:.3f} "
            f"| {f(r['threshold_log10'], '.2f')} / {f(r['threshold_fit_log10'], '.2f')} / "
            f"{f(r['threshold_theory_log10'], '.1f')} | {f(r['gap_theory'], '.1f')} |"
        )
    return "\n".join(out)


def _main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m sgpverify.assumptions", description="Print the constants table of docs/constants.md (markdown)."
    )
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--horizon", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lyapunov-steps", type=int, default=4000)
    a = ap.parse_args(argv)
    print(format_constants_table(constants_table(a.nodes, a.horizon, a.seed, lyapunov_steps=a.lyapunov_steps)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
