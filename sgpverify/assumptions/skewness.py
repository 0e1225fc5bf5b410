"""Equilibrium skewness and the directed-graph lower bound of Liang, Huang, Xin and Yuan.

Liang, Huang, Xin and Yuan (arXiv 2312.04928, "Towards better understanding the influence of
directed networks on decentralized stochastic optimization") measure a column-stochastic mixing
matrix ``W`` by two numbers: the **equilibrium skewness** ``kappa_pi = max_i pi_i / min_i pi_i``
of its Perron vector ``pi`` (``W pi = pi``, ``1^T pi = 1``), and ``beta_pi = ||W - pi 1^T||_pi``,
read here as the operator norm induced by ``||x||_pi = ||diag(pi)^{-1/2} x||_2``, i.e. the
spectral norm of ``diag(pi)^{-1/2} (W - pi 1^T) diag(pi)^{1/2}``. Their lower bound on the
iterations a decentralised stochastic first-order method needs to reach
``E ||grad f||^2 <= eps`` over such a matrix is, up to an absolute constant,

    Omega( sigma^2 L Delta / (n eps^2) + (1 + log kappa_pi) L Delta / ((1 - beta_pi) eps) ),

with ``Delta = f(x^0) - f*``, under conditions on ``beta_pi`` (bounded away from 0, at most
``1 - 1/n``). SGP's schedules change at every step, and a single step of the one-peer graphs is
not even strongly connected, so :func:`window_equilibrium` measures the product of the matrices
of one window that is (the period of a periodic schedule, else the shortest window from step 0
whose union graph is strongly connected), and says where the bound's conditions fail.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..graphs import Topology, is_strongly_connected
from ..mixing import mixing_schedule
from ..validation import check_float, check_int

__all__ = ["Equilibrium", "equilibrium", "window_equilibrium", "directed_lower_bound"]

#: The largest n measured with dense algebra (an n x n eigen- and singular value problem).
MAX_DENSE_N = 4096


@dataclasses.dataclass(frozen=True)
class Equilibrium:
    """``kappa_pi``, ``beta_pi`` and the Perron vector ``pi`` of one column-stochastic matrix
    (or of a window's product, ``window`` steps long), and whether the lower bound's conditions
    hold (``conditions``, with the reason in ``why`` where they do not)."""

    n: int
    window: int
    kappa_pi: float
    beta_pi: float
    pi: np.ndarray
    conditions: bool
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "window": self.window,
            "kappa_pi": self.kappa_pi,
            "beta_pi": self.beta_pi,
            "conditions": self.conditions,
            "why": self.why,
        }


def _dense(P: Any) -> np.ndarray:
    A = P.toarray() if sp.issparse(P) else np.asarray(P, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"P must be a square matrix, got shape {A.shape}")
    if A.shape[0] > MAX_DENSE_N:
        raise ValueError(f"P must have at most {MAX_DENSE_N} rows (dense algebra), got {A.shape[0]}")
    return A


def equilibrium(P: Any, window: int = 1) -> Equilibrium:
    """``kappa_pi`` and ``beta_pi`` of a column-stochastic matrix ``P`` (dense or sparse).

    Examples
    --------
    >>> import numpy as np
    >>> e = equilibrium(np.array([[0.5, 1.0], [0.5, 0.0]]))
    >>> round(e.kappa_pi, 6), bool(e.beta_pi < 1)
    (2.0, True)
    """
    A = _dense(P)
    n = A.shape[0]
    vals, vecs = np.linalg.eig(A)
    one = np.abs(vals - 1.0) <= 1e-9 * max(1, n)
    if one.sum() != 1:
        return Equilibrium(
            n, window, math.inf, math.nan, np.full(n, np.nan), False,
            f"eigenvalue 1 has multiplicity {int(one.sum())}: the matrix is reducible (not strongly connected), "
            "its Perron vector is not unique",
        )  # fmt: skip
    pi = np.real(vecs[:, np.flatnonzero(one)[0]])
    pi = pi / pi.sum()
    if np.any(pi <= 0):
        return Equilibrium(
            n, window, math.inf, math.nan, pi, False,
            f"the Perron vector has entries <= 0 (min {pi.min():.3g}): some node receives nothing in the window",
        )  # fmt: skip
    s = np.sqrt(pi)
    M = (A - np.outer(pi, np.ones(n))) * (s[None, :] / s[:, None])
    beta = float(np.linalg.norm(M, 2))
    kappa = float(pi.max() / pi.min())
    why = []
    if beta <= 64 * np.finfo(float).eps * n:
        why.append(f"beta_pi = {beta:.2g} is zero to round-off (the bound needs beta_pi bounded away from 0)")
    if beta > 1 - 1 / n:
        why.append(f"beta_pi = {beta:.4g} > 1 - 1/n = {1 - 1 / n:.4g}")
    pi.setflags(write=False)
    return Equilibrium(n, window, kappa, beta, pi, not why, "; ".join(why))


def window_equilibrium(topology: Topology, max_window: int = 64) -> Equilibrium:
    """:func:`equilibrium` of the product of one window of a schedule's push matrices.

    The window is the period of a periodic schedule, else the shortest window from step 0 (at
    most ``max_window`` steps) whose union graph is strongly connected: a single step of SGP's
    one-peer graphs is not.
    """
    max_window = check_int("max_window", max_window, min_value=1)
    S = mixing_schedule(topology)
    n = S.n
    if n > MAX_DENSE_N:
        raise ValueError(f"topology must have at most {MAX_DENSE_N} nodes (dense algebra), got {n}")
    if topology.period is not None and topology.period <= max_window:
        window = int(topology.period)
    else:
        edges, window = [], None
        for k in range(max_window):
            edges.append(np.asarray(topology.edges(k)).reshape(-1, 2))
            if is_strongly_connected(n, np.concatenate(edges)):
                window = k + 1
                break
        if window is None:
            raise ValueError(f"the first {max_window} steps of {topology.name} never connect every node to every other")
    W = np.eye(n)
    for k in range(window):
        W = S.matrix(k) @ W
    return equilibrium(W, window=window)


def directed_lower_bound(*, L: float, delta_f: float, sigma2: float, n: int, eps: float, eq: Equilibrium) -> float:
    """``sigma^2 L Delta / (n eps^2) + (1 + log kappa_pi) L Delta / ((1 - beta_pi) eps)``: the lower
    bound of Liang et al. on the iterations to ``E ||grad f||^2 <= eps``, without its absolute
    constant (so a scale, not a number of iterations to hold a run to), for windows of ``eq.window``
    steps counted as ``eq.window`` iterations each in the second term.

    Examples
    --------
    >>> import numpy as np
    >>> e = equilibrium(np.full((4, 4), 0.25) * 0.5 + np.eye(4) * 0.5)
    >>> round(directed_lower_bound(L=1, delta_f=1, sigma2=0, n=4, eps=0.1, eq=e), 3)
    20.0
    """
    for name, v in (("L", L), ("delta_f", delta_f), ("sigma2", sigma2)):
        check_float(name, v, low=0.0)
    eps = check_float("eps", eps, low=0.0, low_open=True)
    if not math.isfinite(eq.beta_pi) or eq.beta_pi >= 1:
        return math.inf
    noise = sigma2 * L * delta_f / (n * eps**2)
    network = (1 + math.log(eq.kappa_pi)) * L * delta_f / ((1 - eq.beta_pi) * eps) * eq.window
    return noise + network
