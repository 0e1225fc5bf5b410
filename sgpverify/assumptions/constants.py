"""The constants of the analysis: Nedic-Olshevsky's (C, q, delta), Theorem 1's threshold, the step and weight checks.

:func:`nedic_olshevsky_constants` (and :func:`theory_constants`, its tuple
form) evaluate the published constants for n rows and window B, and
:func:`nedic_olshevsky_hypotheses` says which of the lemma's hypotheses a
schedule breaks; :func:`theorem1_threshold` evaluates the known part of
Theorem 1's threshold; :func:`effective_step` and :func:`weight_floor_ok`
turn the push-sum weights into the checks of the analysis.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..mixing import EPS
from ..serialize import jsonable
from ..validation import check_int
from .rates import log10_gap

if TYPE_CHECKING:
    from .report import MixingReport


def sigma2(P: sp.sparray | sp.spmatrix, circulant: bool = False) -> float:
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


def theory_constants(
    N: int, B: int | None, doubly_stochastic: bool, sigma2_max: float | None = None
) -> tuple[float | None, float | None, float | None, float | None]:
    """Nedic-Olshevsky constants (q, C, delta, log10(1 - q)) for N rows and window B.

    Notes
    -----
    docs/theory.md section 1b, "Connectivity and products of mixing matrices"
    (Nedic and Olshevsky, IEEE TAC 2016): in general
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


@dataclasses.dataclass(frozen=True)
class EffectiveStep:
    """The step a node's de-biased iterate takes, ``gamma / weight_min``, against ``1 / L``.

    Unpacks as ``(step, ok)``.
    """

    step: float
    limit: float
    ok: bool

    def __iter__(self) -> Iterator[float | bool]:
        return iter((self.step, self.ok))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def effective_step(gamma: float, weight_min: float, L: float) -> EffectiveStep:
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
    from ..validation import check_float

    gamma = check_float("gamma", gamma, low=0, low_open=True)
    weight_min = check_float("weight_min", weight_min, low=0, low_open=True)
    L = check_float("L", L, low=0, low_open=True)
    step = gamma / weight_min
    return EffectiveStep(step=step, limit=1.0 / L, ok=bool(step <= 1.0 / L))


def weight_floor_ok(weight_min: float | None, delta: float | None, horizon: int = 1) -> bool | None:
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def theorem1_threshold_log10(C: float, q: float, n: int, L: float, log10_gap_q: float | None = None) -> float:
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


def theorem1_threshold(C: float, q: float, n: int, L: float, *, log10_gap_q: float | None = None) -> Threshold:
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
    from .. import theory

    lg = theorem1_threshold_log10(C, q, n, L, log10_gap_q)
    if lg < 300 and q < 1:
        value = float(theory.evaluate(theory.PUBLISHED_THRESHOLD_KNOWN_PART, n=n, L=L, C=C, q=q))
    else:
        value = math.inf
    return Threshold(value=value, log10=lg)


@dataclasses.dataclass(frozen=True)
class NedicOlshevsky:
    """Nedic-Olshevsky constants and their hypotheses (docs/theory.md section 1b).

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


#: The hypotheses of Nedic and Olshevsky's lemma (IEEE TAC 2016) on the matrices P^(k).
NEDIC_OLSHEVSKY_HYPOTHESES = (
    "every P^(k) is column-stochastic and non-negative",
    "every P^(k) has a positive diagonal (each node keeps a share of its own mass)",
    "positive entries are bounded below uniformly (weights 1/out-degree: >= 1/N)",
    "B-strong connectivity: every window union of B consecutive graphs is strongly connected",
)


def nedic_olshevsky_constants(
    n: int, B: int, *, doubly_stochastic: bool = False, sigma2_max: float | None = None
) -> NedicOlshevsky:
    """Nedic-Olshevsky's ``(C, q, log10(1 - q))`` and weight floor for ``n`` rows and window ``B``.

    In general ``delta = n^(-n B)`` and ``q = (1 - n^(-n B))^(1/B)``; for
    doubly stochastic (regular) schedules ``delta = 1`` and
    ``q = min((1 - 1/(4 n^3))^(1/B), max_k sigma_2(P^(k)))``; ``C = 4``.

    Notes
    -----
    Hypotheses of the lemma (:data:`NEDIC_OLSHEVSKY_HYPOTHESES`): column
    stochastic with a positive diagonal, a uniform lower bound on positive
    entries, B-strong connectivity. Delay-augmented matrices
    (docs/theory.md section 1b, "Delays and the augmented matrix") have a
    ZERO diagonal on their buffer rows, so for tau > 0 they fall outside the
    lemma: the constants are then evaluated for ``N = n (tau + 1)`` as a reading of the paper's construction, not as a
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


def nedic_olshevsky_hypotheses(report: MixingReport) -> list[str]:
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
