"""Numerical checks of the mixing assumptions of the SGP analysis.

:func:`check_mixing` measures, over a finite horizon, every quantity that the
analysis assumes of the mixing matrices ``P^(k)`` (THEORY.md sections 5-6):
column-stochasticity, non-negativity, positive self-weights, the window length
B of strong connectivity and the diameter Delta of the window unions, the
contraction constants C and q of the products ``P^(k:s)``, and the push-sum
weight floor. It also evaluates the published Nedic-Olshevsky constants for the
same n and B so that users see how loose they are.

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

__all__ = ["MixingReport", "check_mixing", "find_B", "diameter", "contraction"]

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
        Measured contraction: ``max_ij |P^(s+t:s) - phi 1^T| <= C q^t`` over the
        measured products (q from a log-linear fit of the tail, C the smallest
        constant making the envelope hold for every measured t).
    q_fit_window : list of int or None
        The range ``[t0, t1]`` of product lengths used to fit q.
    contraction_starts, contraction_columns : int
        Number of start steps s and of columns of the products tracked.
    q_theory, C_theory, delta_theory : float or None
        Nedic-Olshevsky constants for this n (rows) and B: in general
        ``q = (1 - N^(-N B))^(1/B)``, ``delta = N^(-N B)``; for doubly stochastic
        schedules ``q = min((1 - 1/(4 N^3))^(1/B), max_k sigma_2(P^(k)))``,
        ``delta = 1``; ``C = 4``.
    q_theory_log10_gap : float or None
        ``log10(1 - q_theory)``, exact where ``q_theory`` rounds to 1.0.
    weight_min : float
        Smallest push-sum weight of a real node over the horizon, from w = 1.
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
    q_fit_window: list | None
    contraction_starts: int
    contraction_columns: int
    q_theory: float | None
    C_theory: float | None
    delta_theory: float | None
    q_theory_log10_gap: float | None
    weight_min: float
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
        ("column_stochastic", f"{_fmt(r.column_stochastic)} (max |1 - sum| = {r.column_sum_error:.1e}, atol = {r.atol:.1e})"),
        ("nonnegative", r.nonnegative),
        ("positive_self_weights", f"{_fmt(r.positive_self_weights)} (min {r.min_self_weight:.6g})"),
        ("min_positive_entry", r.min_positive_entry),
        ("doubly_stochastic", r.doubly_stochastic),
        ("B", r.B),
        ("diameter", r.diameter if r.diameter_exact or r.diameter is None else f"<= {r.diameter} (upper bound)"),
        ("q (measured)", r.q),
        ("C (measured)", r.C),
        ("q fit window", r.q_fit_window),
        ("q_theory", r.q_theory),
        ("log10(1 - q_theory)", r.q_theory_log10_gap),
        ("C_theory", r.C_theory),
        ("delta_theory", r.delta_theory),
        ("weight_min", r.weight_min),
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
    """Off-diagonal positive entries of P as (src, dst) = (column, row) edges."""
    C = sp.coo_array(P)
    keep = (C.row != C.col) & (C.data > 0)
    return np.stack([C.col[keep].astype(np.int64), C.row[keep].astype(np.int64)], 1)


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
        windows = [(l * B, (l + 1) * B) for l in range(horizon // B)]
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
    C = float(np.max(dev[ts_all] / q ** ts_all))
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
        Number of product columns tracked for C and q: all when rows <= 512
        (default), else 256 chosen at random (seeded).
    starts : int
        Number of start steps s for the products (spread over the first half).

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
    if period is None:  # aperiodic: build each P^(k) once for this check
        _mats = {}

        def matrix_of(k, _get=S.matrix):
            if k not in _mats:
                _mats[k] = _get(k)
            return _mats[k]
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
            first["col"] = f"column {j} of P^({k}) sums to {colsum[j]:.15g} (|1 - sum| = {err[j]:.1e} > atol = {tol:.1e})"
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
    edge_cache = {}

    def edges_of(k):
        key = k % period if period is not None else k
        if key not in edge_cache:
            edge_cache[key] = _pattern_edges(matrix_of(k))
        return edge_cache[key]

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

    # contraction of products
    rng = rng_for(seed, "columns")
    if columns is None and circulant:
        cols = np.array([0])
    elif columns is None:
        cols = np.arange(N) if N <= 512 else np.sort(rng.choice(N, 256, replace=False))
    else:
        m = check_int("columns", columns, min_value=1)
        cols = np.arange(N) if m >= N else np.sort(rng.choice(N, m, replace=False))
    start_list = sorted({int(s) for s in np.linspace(0, max(0, (horizon - 1) // 2), starts)})
    dev = contraction(matrix_of, N, n, horizon, start_list, cols)
    q, Cm, window = fit_contraction(dev)
    if q >= 1.0:
        violations.append(f"products do not contract over the horizon: measured q = {q:.6g} >= 1")

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
    q_th, C_th, delta_th, log10_gap = theory_constants(N, B, doubly, sig)

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
        q_fit_window=list(window) if window else None,
        contraction_starts=len(start_list),
        contraction_columns=len(cols),
        q_theory=q_th,
        C_theory=C_th,
        delta_theory=delta_th,
        q_theory_log10_gap=log10_gap,
        weight_min=wmin,
        period=period,
        period_product_error=ppe,
        period_product_lambda2=lam2,
        violations=tuple(violations),
    )
    if strict and violations:
        raise MixingAssumptionError(f"{S.name}: " + "; ".join(violations))
    return report
