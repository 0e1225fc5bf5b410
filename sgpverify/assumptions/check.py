"""The check itself: :func:`check_mixing` measures every mixing assumption of a schedule.

Its parts run in this order, each measuring one group of the report's fields:
the facts of each step (column sums, signs, self weights), the connectivity
(B, diameter), the contraction constants (deviations, fit, exact and Lyapunov
rates, envelope), the push-sum weight floor, the period product and the
theory's constants. The byte budgets below bound the memory of the
matrices, edges and product columns it keeps; they are read here, at call
time (set them on this module, ``sgpverify.assumptions.check``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import scipy.sparse as sp

from ..errors import MixingAssumptionError
from ..graphs import PeriodicTopology, Topology
from ..mixing import MixingSchedule, as_topology, column_sum_tolerance
from ..validation import check_int, rng_for
from .connectivity import (
    EXACT_DIAMETER_MAX,
    diameter,
    find_B,
    first_disconnected_window,
    pattern_edges,
    union_graph,
)
from .constants import nedic_olshevsky_hypotheses, sigma2, theorem1_threshold_log10, theory_constants, weight_floor_ok
from .contraction import ROUND_OFF_FLOOR, deviation_series, envelope, fit_contraction, max_deviation, validate_envelope
from .rates import as_schedule, exact_rho, log10_gap, lyapunov_rate_of, min_lyapunov_steps, rate_bound_valid
from .report import MixingReport

if TYPE_CHECKING:
    from collections.abc import Callable

    from .rates import DelaySpec, ScheduleSource

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


def default_columns(N: int) -> int:
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
    source: ScheduleSource,
    tau: int = 0,
    delay: DelaySpec = "fixed",
    horizon: int = 100,
    seed: int | None = None,
    *,
    weights: Literal["push", "metropolis"] = "push",
    strict: bool = False,
    atol: float | None = None,
    columns: int | None = None,
    starts: int = 4,
    envelope_horizon: int | None = None,
    lyapunov_steps: int = 2000,
    lyapunov_segments: int = 10,
    run_steps: int | None = None,
) -> MixingReport:
    """Measure the mixing assumptions of a schedule over a finite horizon.

    Parameters
    ----------
    source : Topology, MixingSchedule, networkx graph, matrix, or list of them
        What to check (see :func:`sgpverify.mixing.mixing_schedule`): a list
        of matrices, of networkx graphs or of topologies is the periodic
        schedule using item ``k mod len`` at step k.
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
    run_steps : int, optional
        Steps of the longest run the schedule is used for. B-strong connectivity
        of the real (undelayed) schedule, with its B over the horizon, is then
        streamed over every window of ``[0, run_steps)``: a schedule that
        disconnects at any step of the run violates the assumption, whatever the
        step. The other constants stay measured over ``horizon`` (the report says
        so). Default: the horizon only.

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
    if run_steps is not None:
        run_steps = check_int("run_steps", run_steps, min_value=1)
    source = as_topology(source)
    S = as_schedule(source, tau, delay, seed, weights)
    matrix_of = _matrices(S)
    # circulant schedules (i -> i + offset for every node): every matrix and
    # product is circulant, so one column and one BFS source tell everything
    circulant = isinstance(source, PeriodicTopology) and source.offsets is not None and tau == 0

    facts, violations = _step_facts(matrix_of, S, horizon, atol)
    connectivity = _connectivity(matrix_of, S, horizon, circulant)
    if connectivity["B"] is None:
        violations.append(
            f"no window length B <= horizon = {horizon} makes every window's union graph strongly connected"
        )
    run = {"run_steps": None, "run_B": None, "run_window_disconnected": None}
    if run_steps is not None and connectivity["B"] is not None:
        # without delays the real schedule is the one examined over the horizon: its B is known
        run = run_connectivity(
            S if not isinstance(source, Topology) and S.tau == 0 else source,
            run_steps,
            horizon,
            weights=weights,
            B_horizon=connectivity["B"] if S.tau == 0 else None,
        )
        if run.pop("run_violation") is not None:
            violations.append(_run_sentence(run, horizon))
    elif run_steps is not None:
        run["run_steps"] = run_steps
    cols = _tracked_columns(S.N, columns, circulant, seed)
    rates = _contraction_constants(
        matrix_of, S, horizon, starts, cols, envelope_horizon, lyapunov_steps, lyapunov_segments, circulant, seed
    )
    if rates["q"] >= 1.0:
        violations.append(f"products do not contract: rate q = {rates['q']:.6g} >= 1 ({rates['q_source']})")
    weight_min = _weight_min(matrix_of, S, horizon)
    period_product = _period_product(matrix_of, S, horizon, cols, circulant)
    theory = _theory(
        matrix_of, S, horizon, connectivity["B"], facts["doubly_stochastic"], circulant, rates["q_true_log10_gap"]
    )

    report = MixingReport(
        topology=S.name,
        n=S.n,
        tau=S.tau,
        rows=S.N,
        horizon=horizon,
        delay=S.model.name if S.model is not None else None,
        **facts,
        **connectivity,
        **run,
        **rates,
        **theory,
        nedic_olshevsky_outside=[],
        weight_min=weight_min,
        weight_floor_ok=weight_floor_ok(weight_min, theory["delta_theory"], horizon),
        period=S.period,
        **period_product,
        violations=tuple(violations),
    )
    report = dataclasses.replace(report, nedic_olshevsky_outside=nedic_olshevsky_hypotheses(report))
    if strict and violations:
        raise MixingAssumptionError(f"{S.name}: " + "; ".join(violations))
    return report


# ---------------------------------------------------------------- the parts of check_mixing, in their order
# Each returns the MixingReport fields it measured, by name.


def _matrices(S: MixingSchedule) -> Callable[[int], sp.csr_array]:
    """``k -> P^(k)``: periodic schedules cache a period themselves; an aperiodic
    one's matrices are built once for this check, memory permitting
    (:data:`MATRIX_CACHE_BYTES`). Beyond the budget a matrix is rebuilt when asked
    again: the same matrix (random schedules are seeded by step)."""
    if S.period is not None:
        return S.matrix
    return _BudgetCache(
        S.matrix,
        MATRIX_CACHE_BYTES,
        lambda P: sum(getattr(getattr(P, a, None), "nbytes", 0) for a in ("data", "indices", "indptr")),
    )


def _step_facts(matrix_of, S, horizon, atol):
    """Column sums, signs, self weights and row sums of each distinct ``P^(k)`` of the horizon.

    Returns the fields ``column_stochastic`` .. ``doubly_stochastic`` and the
    violations: the first step that breaks each property, with its measured value.
    """
    n, period = S.n, S.period
    distinct = range(min(horizon, period)) if period is not None else range(horizon)
    col_err, tol_used, min_pos, min_self = 0.0, 0.0, np.inf, np.inf
    doubly = True
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
            if float(data.min()) < 0 and "neg" not in first:
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
    facts = {
        "column_stochastic": "col" not in first,
        "column_sum_error": col_err,
        "atol": tol_used,
        "nonnegative": "neg" not in first,
        "positive_self_weights": "self" not in first,
        "min_self_weight": min_self,
        "min_positive_entry": min_pos,
        "doubly_stochastic": doubly,
    }
    return facts, list(first.values())


def _connectivity(matrix_of, S, horizon, circulant):
    """The fields ``B``, ``diameter`` and ``diameter_exact``.

    The steps' edge arrays are kept within :data:`EDGE_CACHE_BYTES` (by residue
    for periodic schedules); they and the last union graph are dropped on
    return: the contraction needs the memory.
    """
    N, period = S.N, S.period
    edges_of = _BudgetCache(
        lambda k: pattern_edges(matrix_of(k)),
        EDGE_CACHE_BYTES,
        lambda e: e.nbytes,
        key=(lambda k: k % period) if period is not None else None,
    )
    B, windows = find_B(N, edges_of, horizon, period)
    diam = None
    if B is not None:
        seen = {}
        diam = 0
        for a, b in windows:
            key = frozenset(k % period for k in range(a, b)) if period else (a, b)
            if key in seen:
                continue
            ks = sorted(key) if period else range(a, b)
            g = union_graph(N, [edges_of(k) for k in ks])
            seen[key] = diameter(g, vertex_transitive=circulant)
            diam = max(diam, seen[key])
    return {"B": B, "diameter": diam, "diameter_exact": bool(circulant or N <= EXACT_DIAMETER_MAX)}


def _run_sentence(run, horizon):
    a, b = run["run_window_disconnected"]
    return (
        f"no window length B <= horizon = {horizon} keeps the union graphs strongly connected over the "
        f"{run['run_steps']} steps of the longest run: the union of steps [{a}, {b}) is not (B = {b - a}, the "
        f"horizon's; the constants are measured over the horizon)"
    )


def run_connectivity(
    source: ScheduleSource,
    run_steps: int,
    horizon: int,
    *,
    weights: Literal["push", "metropolis"] = "push",
    B_horizon: int | None = None,
) -> dict[str, Any]:
    """B-strong connectivity of the real (undelayed) schedule streamed over every window of a run.

    Returns the :class:`MixingReport` fields ``run_steps``, ``run_B`` and
    ``run_window_disconnected``, and ``run_violation`` (the sentence
    :func:`check_mixing` adds to its violations, or None). ``run_B`` is the
    smallest window length, from the horizon's B up to the horizon itself, whose
    every window inside ``[0, run_steps)`` is strongly connected: random schedules
    may need a longer window over a long run than over the horizon (a sample
    property). None if no length up to the horizon works; then
    ``run_window_disconnected`` is the first failing window at the horizon's B.
    ``B_horizon``: the horizon's B, when already known.

    Examples
    --------
    >>> import sgpverify as sv
    >>> run_connectivity(sv.graphs.exponential(8), 5000, 40)["run_B"]
    3
    """
    run_steps = check_int("run_steps", run_steps, min_value=1)
    horizon = check_int("horizon", horizon, min_value=1)
    out = {"run_steps": run_steps, "run_B": None, "run_window_disconnected": None, "run_violation": None}
    if isinstance(source, Topology):
        n, edges_of, period = source.n, source.edges, source.period
    else:
        S = as_schedule(source, 0, "fixed", None, weights)
        n, period = S.n, S.period
        edges_of = lambda k: pattern_edges(S.base_matrix(k))  # noqa: E731
    B0 = B_horizon if B_horizon is not None else find_B(n, edges_of, min(horizon, run_steps), period)[0]
    if B0 is None:
        return out  # the horizon has no B: a violation of its own
    first = first_disconnected_window(n, edges_of, B0, run_steps, period)
    if first is None:
        out["run_B"] = B0
        return out
    for B in range(B0 + 1, min(horizon, run_steps) + 1):
        if first_disconnected_window(n, edges_of, B, run_steps, period) is None:
            out["run_B"] = B
            return out
    out["run_window_disconnected"] = first
    out["run_violation"] = _run_sentence(out, horizon)
    return out


def _tracked_columns(N, columns, circulant, seed):
    """The product columns tracked for C and q: one for circulant schedules, else
    ``columns`` (default :func:`default_columns`), all or a seeded random choice."""
    rng = rng_for(seed, "columns")
    if columns is None and circulant:
        return np.array([0])
    m = default_columns(N) if columns is None else check_int("columns", columns, min_value=1)
    return np.arange(N) if m >= N else np.sort(rng.choice(N, m, replace=False))


def _contraction_constants(
    matrix_of, S, horizon, starts, cols, envelope_horizon, lyapunov_steps, lyapunov_segments, circulant, seed
):
    """The fields ``q``, ``C``, ``q_source``, the fit, the rates, the envelope's
    horizon and ratios, their thresholds, ``contraction_*`` and ``q_true_log10_gap``.

    The deviations of the products from ``starts`` start steps are followed past
    the horizon (for the envelope) and fitted inside it (``q_fit``); the envelope
    takes q at least the exact rate (periodic) or the Lyapunov upper end.
    """
    start_list = sorted({int(s) for s in np.linspace(0, max(0, (horizon - 1) // 2), starts)})
    if envelope_horizon is None:
        max_len = max(10 * horizon, 1000)
    else:
        max_len = check_int("envelope_horizon", envelope_horizon, min_value=horizon)
    dev_env, dev = deviation_series(matrix_of, S.N, S.n, start_list, cols, max_len, horizon)
    q_fit, C_fit, window = fit_contraction(dev)
    lyap, q_exact, q_exact_method, exact_log_q = _rates(
        matrix_of, S, lyapunov_steps, lyapunov_segments, circulant, seed
    )
    if q_exact is not None:
        q_lo, q_source = q_exact, "exact"
        true_gap = log10_gap(log_q=exact_log_q) if exact_log_q > -math.inf else 0.0
    else:
        q_lo, q_source = lyap.interval[1], "lyapunov-upper"
        true_gap = lyap.log10_gap
    Cm, q = envelope(dev_env, q_lo)
    reaches = bool(dev_env.size < max_len or (dev_env.size and dev_env[-1] < ROUND_OFF_FLOOR))
    over_fit = dev_env.size / (window[1] + 1) if window else None
    return {
        "q": q,
        "C": Cm,
        "q_source": q_source,
        "q_fit": q_fit,
        "C_fit": C_fit,
        "q_fit_window": list(window) if window else None,
        "q_exact": q_exact,
        "q_exact_method": q_exact_method,
        "q_lyapunov": lyap.rate,
        "q_lyapunov_interval": list(lyap.interval),
        "envelope_horizon": int(dev_env.size),
        "envelope_reaches_floor": reaches,
        "envelope_horizon_over_fit": over_fit,
        "envelope_horizon_ok": bool(reaches or (over_fit is not None and over_fit >= 10)),
        "envelope_worst_ratio": validate_envelope(dev_env, Cm, q),
        "fit_envelope_worst_ratio": validate_envelope(dev_env, C_fit, q_fit),
        "q_fit_below_true": bool(q_fit < (q_exact if q_exact is not None else lyap.interval[0])),
        "one_over_one_minus_q": _one_over_gap(q),
        "one_over_one_minus_q_fit": _one_over_gap(q_fit),
        "threshold_log10": _threshold_log10(Cm, q, S.n),
        "threshold_fit_log10": _threshold_log10(C_fit, q_fit, S.n),
        "contraction_starts": len(start_list),
        "contraction_columns": len(cols),
        "q_true_log10_gap": true_gap,
    }


def _rates(matrix_of, S, lyapunov_steps, lyapunov_segments, circulant, seed):
    """The Lyapunov rate (every schedule) and, for a periodic one, the exact rate:
    ``(lyapunov, q_exact, q_exact_method, log q_exact)``, the last three None when aperiodic."""
    segments = check_int("lyapunov_segments", lyapunov_segments, min_value=2)
    lyap_steps = check_int("lyapunov_steps", lyapunov_steps, min_value=4)
    least = min_lyapunov_steps(S.period, segments)
    if lyap_steps < least:
        raise ValueError(
            f"lyapunov_steps must be at least {least} for this schedule (a tenth is burn-in, the rest at least 2 "
            f"segments of whole periods of {S.period} steps), got {lyap_steps}"
        )
    lyap = lyapunov_rate_of(
        matrix_of if S.period is not None else S.matrix,
        S.N,
        lyap_steps,
        segments,
        lyap_steps // 10,
        S.period,
        rng_for(seed, "columns", 7919),
    )
    if S.period is None:
        return lyap, None, None, None
    rho, method = exact_rho([matrix_of(k) for k in range(S.period)], S.N, circulant)
    exact_log_q = math.log(rho) / S.period if rho > 0 else -math.inf
    return lyap, rho ** (1.0 / S.period), method, exact_log_q


def _weight_min(matrix_of, S, horizon):
    """Smallest push-sum weight of a real node over the horizon, from w = 1 on the real rows."""
    n = S.n
    w = np.zeros(S.N)
    w[:n] = 1.0
    wmin = 1.0
    for k in range(horizon):
        w = matrix_of(k) @ w
        wmin = min(wmin, float(w[:n].min()))
    return wmin


def _period_product(matrix_of, S, horizon, cols, circulant):
    """The fields ``period_product_error`` and ``period_product_lambda2`` (None
    unless a whole period fits the horizon; lambda2 for rows <= 1024 or circulant)."""
    N, period = S.N, S.period
    ppe = lam2 = None
    if period is not None and period <= horizon:
        pcols = np.array([0]) if circulant else (np.arange(N) if N <= 4096 else cols)
        ppe = 0.0
        blocks = []
        chunk = 512
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
            ppe = max(ppe, max_deviation(V, mean_col))
            if N <= 1024 or circulant:
                blocks.append(V)
        if circulant:  # eigenvalues of a circulant: the DFT of its first column
            ev = np.sort(np.abs(np.fft.fft(blocks[0][:, 0])))[::-1]
            lam2 = float(ev[1]) if N > 1 else 0.0
        elif N <= 1024:
            Pi = np.concatenate(blocks, axis=1)
            ev = np.sort(np.abs(np.linalg.eigvals(Pi)))[::-1]
            lam2 = float(ev[1]) if N > 1 else 0.0
    return {"period_product_error": ppe, "period_product_lambda2": lam2}


def _theory(matrix_of, S, horizon, B, doubly, circulant, true_gap):
    """The fields ``q_theory``, ``C_theory``, ``delta_theory``, ``q_theory_log10_gap``,
    ``q_theory_valid`` (against the true rate's ``true_gap``) and ``threshold_theory_log10``."""
    N, period = S.N, S.period
    sig = None
    if doubly and B is not None and N > 1:
        ks = range(min(horizon, period, 64)) if period else range(min(horizon, 64))
        sig = max(sigma2(matrix_of(k), circulant) for k in ks)
    q_th, C_th, delta_th, th_gap = theory_constants(N, B, doubly, sig)
    if q_th is None:
        th_valid = None
    elif q_th == 0.0:
        th_valid = bool(true_gap == 0.0)
    else:
        th_valid = rate_bound_valid(th_gap, true_gap, N)
    return {
        "q_theory": q_th,
        "C_theory": C_th,
        "delta_theory": delta_th,
        "q_theory_log10_gap": th_gap,
        "q_theory_valid": th_valid,
        "threshold_theory_log10": _threshold_log10(C_th, q_th, S.n, th_gap),
    }


def _one_over_gap(q):
    return 1.0 / (1.0 - q) if q < 1.0 else math.inf


def _threshold_log10(C, q, n, log10_gap_q=None):
    """log10 of Theorem 1's known threshold at L = 1 (= ``theorem1_threshold(...).log10``,
    tested); None without constants."""
    if C is None or q is None:
        return None
    return theorem1_threshold_log10(C, q, n, 1.0, log10_gap_q)
