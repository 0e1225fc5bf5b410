"""The asymptotic rate of the products of a schedule, computed three ways and compared.

:func:`exact_rate` (periodic schedules: the spectral radius of the period
product on the disagreement subspace, to the power 1/period),
:func:`lyapunov_rate` (every schedule: the top Lyapunov exponent, with a 95%
interval), and :func:`rate_bound_valid`, which decides whether a bound on the
rate is at least the true rate, in ``log10(1 - q)`` (:func:`log10_gap`) so
that rates that round to 1 are still compared exactly.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
import scipy.sparse as sp

from ..graphs import PeriodicTopology
from ..mixing import EPS, MixingSchedule, column_sum_tolerance, mixing_schedule
from ..serialize import jsonable
from ..validation import check_choice, check_int, rng_for

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..graphs import Topology
    from ..mixing import DelayModel

    #: What a schedule is built from (see :func:`sgpverify.mixing.mixing_schedule`).
    ScheduleSource: TypeAlias = (
        Topology
        | MixingSchedule
        | sp.sparray
        | sp.spmatrix
        | ArrayLike
        | Sequence[sp.sparray | sp.spmatrix | ArrayLike]
    )
    #: A delay model: ``"fixed"``, ``"random"``, a :class:`~sgpverify.mixing.DelayModel` or a matrix of delays.
    DelaySpec: TypeAlias = str | DelayModel | ArrayLike


def log10_gap(q: float | None = None, *, log_q: float | None = None) -> float:
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


def as_schedule(
    source: ScheduleSource,
    tau: int,
    delay: DelaySpec,
    seed: int | None,
    weights: Literal["push", "metropolis"],
) -> MixingSchedule:
    """The :class:`~sgpverify.mixing.MixingSchedule` of ``source``, unvalidated (the checks measure violations).

    A schedule is taken as it is (``tau`` must be 0 or its own); anything else
    goes through :func:`sgpverify.mixing.mixing_schedule` with ``validate=False``.
    """
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _segments(usable: int, segments: int, period: int | None) -> tuple[int, int]:
    """``(length, count)`` of the segments that ``usable`` steps are cut into: ``segments`` of at
    least one step (whole periods for a periodic schedule), as many as fit."""
    seg = max(1, usable // segments)
    if period:
        seg = max(period, seg // period * period)
    return seg, min(segments, usable // seg)


def min_lyapunov_steps(period: int | None, segments: int = 10) -> int:
    """The fewest steps :func:`~sgpverify.check_mixing`'s Lyapunov estimate takes (a tenth of them
    burn-in, the rest at least 2 segments of whole periods): 4 for an aperiodic schedule, about
    2.2 periods for a periodic one.

    Examples
    --------
    >>> min_lyapunov_steps(None), min_lyapunov_steps(3), min_lyapunov_steps(50)
    (4, 6, 111)
    """
    steps = 4
    while _segments(steps - steps // 10, segments, period)[1] < 2:
        steps += 1
    return steps


def lyapunov_rate_of(
    matrix_of: Callable[[int], sp.csr_array],
    N: int,
    steps: int,
    segments: int,
    burn_in: int,
    period: int | None,
    rng: np.random.Generator,
) -> LyapunovRate:
    """Core of :func:`lyapunov_rate` on a ``matrix_of(k)`` callable (arguments already validated)."""
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
    seg, m = _segments(usable, segments, period)
    if m < 2:
        raise ValueError(
            "steps must leave at least 2 segments (of whole periods) after burn_in, got steps = "
            f"{steps}, burn_in = {burn_in}, segments = {segments}, period = {period}"
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


def lyapunov_rate(
    source: ScheduleSource,
    *,
    tau: int = 0,
    delay: DelaySpec = "fixed",
    steps: int = 2000,
    segments: int = 10,
    burn_in: int | None = None,
    seed: int | None = 0,
    weights: Literal["push", "metropolis"] = "push",
) -> LyapunovRate:
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
    S = as_schedule(source, tau, delay, seed, weights)
    return lyapunov_rate_of(S.matrix, S.N, steps, segments, burn_in, S.period, rng_for(seed, "columns", 7919))


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
        ``"circulant-fft"``, ``"dense"`` or ``"arpack"``; ``"closed-classes"``
        where rho = 1 is known exactly (:func:`closed_classes`).
    """

    rate: float
    rho: float
    period: int
    log10_gap: float
    method: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


#: Above this many rows :func:`exact_rate` uses ARPACK on a LinearOperator.
EXACT_DENSE_MAX = 512


def closed_classes(mats: Sequence[sp.csr_array], N: int) -> int:
    """Number of closed classes of a period of non-negative column-stochastic steps; 0 otherwise.

    A closed class is a strongly connected component of the union graph of the
    steps (an edge ``j -> i`` wherever some ``P_ij != 0``) that no step's mass
    leaves. Each one, S, is invariant under every step, whose block on S is
    column-stochastic: the period product has a non-negative eigenvector of
    eigenvalue 1 supported on S (Perron-Frobenius). With two closed classes the
    difference of two such eigenvectors (each summing to 1) is a zero-sum
    eigenvector of eigenvalue 1, and no eigenvalue of a non-negative
    column-stochastic product exceeds 1 in modulus: ``rho(Pi (I - J/N)) = 1``
    exactly. Steps that are not non-negative and column-stochastic (within
    :func:`~sgpverify.mixing.column_sum_tolerance`) give 0: nothing is claimed.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> closed_classes([sp.csr_array(np.eye(3))], 3)        # three nodes that never talk
    3
    >>> closed_classes([sp.csr_array([[0.5, 0.5], [0.5, 0.5]])], 2)
    1
    """
    from scipy.sparse.csgraph import connected_components

    # the union graph, j -> i (mass from j to i) in row j, grown one step at a time: its
    # distinct edges only, never the period's edges all at once (at n = 10^6 on the
    # exponential graph those were 4 x 10^7 index pairs, twice the union's)
    G = sp.csr_array((N, N), dtype=bool)
    for P in mats:
        C = sp.coo_array(P)
        if C.data.size and float(C.data.min()) < 0:
            return 0
        colsum = np.asarray(C.sum(axis=0)).ravel()
        if colsum.size and float(np.abs(colsum - 1.0).max()) > column_sum_tolerance(P):
            return 0
        nz = C.data != 0
        step = sp.csr_array((np.ones(int(nz.sum()), dtype=bool), (C.col[nz], C.row[nz])), shape=(N, N))
        del C, nz
        G = G + step
    count, label = connected_components(G, directed=True, connection="strong")
    src = label[np.repeat(np.arange(N, dtype=G.indices.dtype), np.diff(G.indptr))]
    leaving = src != label[G.indices]
    return int(count - np.unique(src[leaving]).size)


def exact_rho(
    mats: Sequence[sp.csr_array],
    N: int,
    circulant: bool = False,
    dense_max: int = EXACT_DENSE_MAX,
    deflate: bool = True,
) -> tuple[float, str]:
    """(rho, method) of ``Pi (I - J/N)`` from one period of sparse matrices.

    ``rho = 1`` is set exactly, not computed (method ``"closed-classes"``), when
    :func:`closed_classes` finds two or more classes that no step's mass leaves:
    the products then do not contract, and an eigenvalue solver would return 1
    give or take the last bits (1 - 2.2e-16 and 1 + 2.2e-16 on different BLAS
    builds), on which the verdict ``q >= 1`` would depend.
    """
    if N == 1:
        return 0.0, "dense"
    if closed_classes(mats, N) >= 2:
        return 1.0, "closed-classes"
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


def exact_rate(
    source: ScheduleSource,
    *,
    tau: int = 0,
    delay: DelaySpec = "fixed",
    seed: int | None = None,
    weights: Literal["push", "metropolis"] = "push",
    dense_max: int = EXACT_DENSE_MAX,
) -> ExactRate:
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
    S = as_schedule(source, tau, delay, seed, weights)
    if S.period is None:
        raise ValueError(f"source must be a periodic schedule for exact_rate, got period None ({S.name})")
    mats = [S.matrix(k) for k in range(S.period)]
    circulant = isinstance(source, PeriodicTopology) and source.offsets is not None and S.tau == 0
    rho, method = exact_rho(mats, S.N, circulant, dense_max)
    rate = rho ** (1.0 / S.period)
    gap = log10_gap(log_q=math.log(rho) / S.period) if rho > 0 else 0.0
    return ExactRate(rate=rate, rho=rho, period=S.period, log10_gap=gap, method=method)


def rate_bound_valid(
    bound_log10_gap: float | None, true_log10_gap: float | None, N: int = 1, q_atol: float | None = None
) -> bool | None:
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
