"""Nonconvex test problems with certified constants.

Every problem implements the Problem protocol (its required part is
:class:`ProblemProtocol`; :func:`check_problem` checks it):

- ``n_nodes``, ``dim`` and the constants ``L`` (each f_i is L-smooth),
  ``sigma2`` (bound on the stochastic-gradient variance of every node),
  ``zeta2`` (bound on the heterogeneity ``(1/n) sum_i ||grad f_i - grad f||^2``)
  and ``f_lower`` (a lower bound on ``f = (1/n) sum_i f_i``);
- ``grad(z, rng)``: for ``z`` shaped ``(..., n, d)``, each node's stochastic
  gradient at its own point (leading axes are replicas);
- ``full_grad(x)`` and ``value(x)`` of f at ``x`` shaped ``(..., d)``.

Optional, used by the verification suite when present: ``f_star`` (the true
minimum of f, or None when unknown: the suite then uses ``f_lower`` and says
so) and ``min_hessian_eigenvalue(x)`` (to report how much of a run visits
points where f is not locally convex). Used by the engine when True:
``batch_metrics``, a promise that ``full_grad`` and ``value`` give, for each
row of a stacked input, the same bits as a call on that row alone (true of
elementwise code with sums over the last axis; not of BLAS products): the
engine then evaluates a chunk of records in one call (QuadraticCosine and
DoubleWell promise it, and the tests check the promise). Also optional:
``grad_replicas(Z, rngs, out)``, the stochastic gradients of R replicas at
``Z`` shaped ``(R, n, d)``, replica r drawing from ``rngs[r]``, written into
``out`` (``(R, n, d)``, C-contiguous): for every r the same bits as
``grad(Z[r], rngs[r])`` and the same draws (QuadraticCosine and DoubleWell
define it; the tests check it). Used where :func:`replica_grads` allows. The
replicas' streams: with it, replica r of a run draws from
``SeedSequence(seed).spawn(R)[r]``; without it,
the R replicas share one stream, the first of these, and step k's gradients
are those of ``grad(Z[0], rng)``, ..., ``grad(Z[R-1], rng)`` called in turn
(independent replicas, the same bits for the same seed). Where one call
``grad(Z, rng)`` on the stacked points gives those bits and leaves ``rng``
where they do (probed once, at the first step whose points differ between
all replicas; the probe is one more call), the engine makes that call.

Each constant is proved in the class docstring (Notes) and checked against
sampled points in the tests. Users plug their own problems in through the same
protocol: the engine never special-cases the built-ins.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from scipy.special import expit

from .constants_check import ConstantEstimate, ConstantsCheck, run_constants_check
from .validation import check_choice, check_float, check_int, check_magnitude

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import ArrayLike

__all__ = [
    "Problem",
    "ProblemProtocol",
    "QuadraticCosine",
    "NonconvexLogistic",
    "DoubleWell",
    "check_problem",
    "check_constants",
    "ConstantsCheck",
    "ConstantEstimate",
    "replica_grads",
    "PROBLEM_NAMES",
    "by_name",
]


class ProblemProtocol(Protocol):
    """The required part of the Problem protocol, as a type for hints.

    Any object with these attributes and methods is a problem; no inheritance
    is needed (:class:`Problem` is only the base of the built-ins). Nothing is
    checked against this class at run time: :func:`check_problem` does the
    checking. The optional parts (``f_star``, ``min_hessian_eigenvalue``,
    ``batch_metrics``, ``grad_replicas``) are described in the module docstring.
    """

    n_nodes: int
    dim: int
    L: float
    sigma2: float
    zeta2: float
    f_lower: float

    def grad(self, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Each node's stochastic gradient at its own point: z (..., n, d) -> (..., n, d)."""

    def full_grad(self, x: np.ndarray) -> np.ndarray:
        """Gradient of f = (1/n) sum_i f_i: x (..., d) -> (..., d)."""

    def value(self, x: np.ndarray) -> np.ndarray | float:
        """f = (1/n) sum_i f_i: x (..., d) -> (...) (a scalar for x of shape (d,))."""


class Problem:
    """Base class of the built-in problems (the protocol needs no inheritance)."""

    n_nodes: int
    dim: int
    L: float
    sigma2: float
    zeta2: float
    f_lower: float
    f_star: float | None = None
    name: str
    #: True when ``value`` and ``full_grad`` accept any leading axes and give, for
    #: each row, the same bits as a call on that row alone: the engine then
    #: evaluates a chunk of records in one call. False (the default) for anything
    #: computed with BLAS products, whose rounding may depend on the batch shape.
    batch_metrics = False

    def constants(self) -> dict[str, float | None]:
        """The certified constants as a dict (``f_star``: true minimum, or None)."""
        return {"L": self.L, "sigma2": self.sigma2, "zeta2": self.zeta2, "f_lower": self.f_lower, "f_star": self.f_star}

    def local_grad(self, z: np.ndarray) -> np.ndarray:  # exact gradients of every f_i at z (..., n, d)
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"<{self.name}: n={self.n_nodes}, d={self.dim}, L={self.L:.4g}, sigma2={self.sigma2:.4g}, "
            f"zeta2={self.zeta2:.4g}>"
        )


def _gaussian_noise(rng, shape, sigma):
    """Noise with E||xi||^2 = sigma^2 over the last axis: N(0, sigma^2 / d I_d)."""
    if sigma == 0.0:
        return 0.0
    return rng.standard_normal(shape) * (sigma / math.sqrt(shape[-1]))


class _LocalPlusNoise(Problem):
    """Problems whose stochastic gradient is ``local_grad(z)`` (elementwise)
    plus Gaussian noise of level ``sigma``: QuadraticCosine and DoubleWell."""

    def grad(self, z: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        return self.local_grad(z) + _gaussian_noise(rng, z.shape, self.sigma)

    def grad_replicas(self, Z: ArrayLike, rngs: Sequence[np.random.Generator], out: np.ndarray) -> np.ndarray:
        """``grad(Z[r], rngs[r])`` for every replica r, into ``out`` (R, n, d):
        the same operations on the stacked replicas (``local_grad`` is
        elementwise), so the same bits per replica; ``standard_normal(out=...)``
        fills replica r with the values ``standard_normal(shape)`` would
        return, from ``rngs[r]`` alone."""
        Z = np.asarray(Z, dtype=float)
        if len(rngs) != Z.shape[0] or out.shape != Z.shape:
            raise ValueError(
                f"grad_replicas needs one generator per replica and out shaped like Z {Z.shape}, "
                f"got {len(rngs)} generators and out {out.shape}"
            )
        if self.sigma == 0.0:
            return np.add(self.local_grad(Z), 0.0, out=out)  # grad adds the noise 0.0 (so -0.0 becomes 0.0)
        for r, rng in enumerate(rngs):
            rng.standard_normal(out=out[r])
        np.multiply(out, self.sigma / math.sqrt(Z.shape[-1]), out=out)
        return np.add(self.local_grad(Z), out, out=out)


class QuadraticCosine(_LocalPlusNoise):
    """Heterogeneous quadratics plus a cosine ripple.

    ``f_i(x) = 1/2 (x - b_i)^T A (x - b_i) + alpha sum_j cos(x_j)``, with
    ``A = diag(a)``, ``a_j`` evenly spaced in ``[a_min, a_max]``, and the
    centres ``b_i = heterogeneity * u_i`` (``u_i`` standard normal, centred so
    that ``mean_i b_i = 0``). Stochastic gradients add Gaussian noise with
    ``E||xi||^2 = sigma^2``.

    Parameters
    ----------
    n, d : int
        Nodes and dimension.
    alpha : float
        Ripple amplitude (>= 0); f is nonconvex iff ``alpha > a_min``.
    heterogeneity : float
        Scale of the spread of the centres b_i (0: identical nodes).
    sigma : float
        Gradient-noise level.
    a_min, a_max : float
        Range of the curvatures of the quadratic part (0 < a_min <= a_max).
    seed : int
        Seed of the centres.

    Notes
    -----
    Certified constants (proofs):

    - **L = max_j a_j + alpha** (``a_max + alpha`` for d >= 2). The Hessian of
      f_i is ``diag(a_j - alpha cos x_j)``, whose eigenvalues lie in
      ``[a_min - alpha, max_j a_j + alpha]``; so
      ``||grad f_i(x) - grad f_i(y)|| <= (max_j a_j + alpha) ||x - y||``.
    - **sigma2 = sigma^2.** The noise is independent of x, mean zero, with
      ``E||xi||^2 = d * sigma^2 / d``.
    - **zeta2 = (1/n) sum_i ||A b_i||^2** (exact, for every x): the cosine terms
      are common to all nodes, so ``grad f_i(x) - grad f(x) = -A (b_i - mean b)
      = -A b_i``.
    - **f_lower = -alpha d.** ``f(x) = 1/2 mean_i (x-b_i)^T A (x-b_i) + alpha
      sum_j cos x_j``; the quadratic part is >= 0 and each cosine >= -1.
    - **f_star** (the true minimum, to round-off): f is separable, ``f(x) =
      c + sum_j g_j(x_j)`` with ``g_j(t) = a_j t^2 / 2 + alpha cos t``. If
      ``a_j >= alpha``, g_j is convex with minimum at 0. Otherwise the
      minimisers are ``+-t*`` with ``t*`` the only root of
      ``h(t) = a_j t - alpha sin t`` in ``(0, pi)`` (h(0) = 0, h'(0) < 0 and h
      is convex on ``(0, pi)``; ``h(pi) > 0``); every other stationary point
      lies in ``|t| <= sqrt(4 alpha / a_j)`` (outside, ``g_j > g_j(0)``) and is
      compared by value: :meth:`coordinate_minima` brackets every sign change
      of h on a fine grid and refines it with Brent's method to ``xtol = 1e-14``.
    - **min_hessian_eigenvalue(x) = min_j (a_j - alpha cos x_j)**: the Hessian of
      f is diagonal.

    Examples
    --------
    >>> p = QuadraticCosine(n=4, d=3, alpha=0.5, sigma=0.1, seed=0)
    >>> p.L, round(p.sigma2, 12)  # sigma ** 2 through libm's pow: its last bit is the platform's
    (1.5, 0.01)
    >>> p.grad(np.zeros((4, 3)), np.random.default_rng(0)).shape
    (4, 3)
    """

    name = "QuadraticCosine"
    #: value and full_grad are elementwise plus sums over the last axis: any
    #: leading axes, the same bits row by row (the engine batches its records)
    batch_metrics = True

    def __init__(
        self,
        n: int,
        d: int,
        *,
        alpha: float = 0.5,
        heterogeneity: float = 1.0,
        sigma: float = 0.1,
        a_min: float = 0.1,
        a_max: float = 1.0,
        seed: int = 0,
    ) -> None:
        self.n_nodes = check_int("n", n, min_value=1)
        self.dim = check_int("d", d, min_value=1)
        self.alpha = check_float("alpha", alpha, low=0.0)
        self.heterogeneity = check_float("heterogeneity", heterogeneity, low=0.0)
        self.sigma = check_magnitude("sigma", check_float("sigma", sigma, low=0.0), self.n_nodes * self.dim)
        self.a_min = check_float("a_min", a_min, low=0.0, low_open=True)
        self.a_max = check_float("a_max", a_max, low=self.a_min)
        rng = np.random.default_rng(check_int("seed", seed, min_value=0))
        self.a = np.linspace(self.a_min, self.a_max, self.dim)
        u = rng.standard_normal((self.n_nodes, self.dim))
        u -= u.mean(axis=0)
        self.b = self.heterogeneity * u
        for arr in (self.a, self.b):
            arr.setflags(write=False)
        self.L = float(self.a.max()) + self.alpha  # a_max, or a_min when d = 1
        self.sigma2 = self.sigma**2
        self.zeta2 = float(np.mean(np.sum((self.a * self.b) ** 2, axis=1)))
        self.f_lower = -self.alpha * self.dim
        # mean_i b_i^T A b_i, the constant of value(): computed once, not per call
        self._value_const = float(np.mean(np.sum(self.a * self.b**2, axis=1)))
        tstar = self.coordinate_minima()
        self.x_star = tstar
        self.f_star = float(self.value(tstar))

    def coordinate_minima(self) -> np.ndarray:
        """A global minimiser of f (separable: one 1-D problem per coordinate)."""
        from scipy.optimize import brentq

        out = np.zeros(self.dim)
        al = self.alpha
        for j, a in enumerate(self.a):  # set-up only (d 1-D problems)
            if a >= al or al == 0:
                continue
            h = lambda t, a=a: a * t - al * math.sin(t)  # noqa: E731
            g = lambda t, a=a: a * t * t / 2 + al * math.cos(t)  # noqa: E731
            R = math.sqrt(4 * al / a) + 1.0
            grid = np.linspace(1e-9, R, 20001)
            hv = a * grid - al * np.sin(grid)
            best_t, best_g = 0.0, g(0.0)
            for i in np.flatnonzero(np.sign(hv[:-1]) * np.sign(hv[1:]) < 0):
                t = brentq(h, grid[i], grid[i + 1], xtol=1e-14, rtol=4 * np.finfo(float).eps)
                if g(t) < best_g:
                    best_t, best_g = t, g(t)
            out[j] = best_t
        return out

    def min_hessian_eigenvalue(self, x: ArrayLike) -> np.ndarray | float:
        """Smallest eigenvalue of the Hessian of f at x (shape (..., d) -> (...))."""
        x = np.asarray(x, dtype=float)
        return np.min(self.a - self.alpha * np.cos(x), axis=-1)

    def local_grad(self, z: np.ndarray) -> np.ndarray:
        return self.a * (z - self.b) - self.alpha * np.sin(z)

    def full_grad(self, x: ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return self.a * x - self.alpha * np.sin(x)  # mean_i b_i = 0

    def value(self, x: ArrayLike) -> np.ndarray | float:
        x = np.asarray(x, dtype=float)
        # mean_i (x-b_i)^T A (x-b_i) = x^T A x + mean_i b_i^T A b_i  (mean b = 0)
        return 0.5 * (np.sum(self.a * x**2, axis=-1) + self._value_const) + self.alpha * np.sum(np.cos(x), axis=-1)


class DoubleWell(_LocalPlusNoise):
    """Separable double wells with linear tilts: ``3^d`` stationary points.

    ``f_i(x) = sum_j w(x_j) + c_i^T x`` with
    ``w(t) = t^2 / 2 + beta exp(-t^2 / (2 s^2))``; the bump at 0 splits each
    coordinate into two wells when ``beta > s^2``. Tilts ``c_i`` are centred
    (``mean_i c_i = 0``) with scale ``heterogeneity``; gradient noise as in
    :class:`QuadraticCosine`.

    Notes
    -----
    - **L = max(|1 - beta/s^2|, 1 + 2 beta e^{-3/2} / s^2).** ``w''(t) = 1 +
      beta (t^2/s^4 - 1/s^2) e^{-t^2/(2 s^2)}``; with ``u = t^2 / s^2`` the bump
      term is ``beta/s^2 (u - 1) e^{-u/2}``, whose range over ``u >= 0`` is
      ``[-beta/s^2, 2 beta e^{-3/2}/s^2]`` (minimum at u = 0, maximum at u = 3).
      The Hessian of f_i is diagonal with entries ``w''(x_j)``.
    - **sigma2 = sigma^2**, as for :class:`QuadraticCosine`.
    - **zeta2 = (1/n) sum_i ||c_i||^2** exactly: ``grad f_i - grad f = c_i``.
    - **f_lower = 0**: ``w(t) >= t^2/2 >= 0`` and the tilts average to zero in f.
    - **f_star = d w*** exactly: ``w'(t) = t (1 - (beta/s^2) e^{-t^2/(2 s^2)})``
      vanishes at 0 and, when ``beta > s^2``, at ``t^2 = 2 s^2 ln(beta/s^2)``,
      where ``w = s^2 ln(beta/s^2) + s^2 < beta = w(0)``; otherwise the minimum is
      ``w(0) = beta``.

    Examples
    --------
    >>> p = DoubleWell(n=2, d=2, beta=2.0, s=1.0, heterogeneity=0.0, sigma=0.0)
    >>> float(p.value(np.zeros(2)))
    4.0
    """

    name = "DoubleWell"
    #: value and full_grad are elementwise plus sums over the last axis: any
    #: leading axes, the same bits row by row (the engine batches its records)
    batch_metrics = True

    def __init__(
        self,
        n: int,
        d: int,
        *,
        beta: float = 2.0,
        s: float = 1.0,
        heterogeneity: float = 0.5,
        sigma: float = 0.1,
        seed: int = 0,
    ) -> None:
        self.n_nodes = check_int("n", n, min_value=1)
        self.dim = check_int("d", d, min_value=1)
        self.beta = check_float("beta", beta, low=0.0)
        self.s = check_float("s", s, low=0.0, low_open=True)
        self.heterogeneity = check_float("heterogeneity", heterogeneity, low=0.0)
        self.sigma = check_magnitude("sigma", check_float("sigma", sigma, low=0.0), self.n_nodes * self.dim)
        rng = np.random.default_rng(check_int("seed", seed, min_value=0))
        c = rng.standard_normal((self.n_nodes, self.dim))
        c -= c.mean(axis=0)
        self.c = self.heterogeneity * c
        self.c.setflags(write=False)
        r = self.beta / self.s**2
        self.L = max(abs(1.0 - r), 1.0 + 2.0 * r * math.exp(-1.5))
        self.sigma2 = self.sigma**2
        self.zeta2 = float(np.mean(np.sum(self.c**2, axis=1)))
        self.f_lower = 0.0
        if self.beta > self.s**2:
            self.f_star = self.dim * (self.s**2 * math.log(r) + self.s**2)
        else:
            self.f_star = self.dim * self.beta

    def min_hessian_eigenvalue(self, x: ArrayLike) -> np.ndarray | float:
        """Smallest eigenvalue of the (diagonal) Hessian of f at x."""
        t = np.asarray(x, dtype=float)
        s2 = self.s**2
        return np.min(1 + self.beta * (t**2 / s2**2 - 1 / s2) * np.exp(-(t**2) / (2 * s2)), axis=-1)

    def _wprime(self, t):
        return t - (self.beta / self.s**2) * t * np.exp(-(t**2) / (2 * self.s**2))

    def local_grad(self, z: np.ndarray) -> np.ndarray:
        return self._wprime(z) + self.c

    def full_grad(self, x: ArrayLike) -> np.ndarray:
        return self._wprime(np.asarray(x, dtype=float))

    def value(self, x: ArrayLike) -> np.ndarray | float:
        x = np.asarray(x, dtype=float)
        return np.sum(x**2 / 2 + self.beta * np.exp(-(x**2) / (2 * self.s**2)), axis=-1)


class NonconvexLogistic(Problem):
    """Logistic regression with a nonconvex regulariser on non-IID synthetic data.

    ``f_i(x) = (1/m_i) sum_{s in S_i} log(1 + exp(-y_s a_s^T x))
    + lam sum_j x_j^2 / (1 + x_j^2)``. The data: ``samples`` points with
    Gaussian features, labels from a random teacher, split across nodes either
    sorted by label (``split="label"``: each node sees mostly one class) or by
    Dirichlet(``dirichlet_alpha``) class proportions. Stochastic gradients are
    real mini-batches of ``batch`` samples drawn uniformly with replacement
    from the node's own data.

    Notes
    -----
    With ``r(t) = t^2 / (1 + t^2)``: ``r''(t) = (2 - 6 t^2) / (1 + t^2)^3`` lies
    in ``[-1/2, 2]`` and ``|r'(t)| <= 3 sqrt(3) / 8``.

    - **L = max_i ||A_i||_2^2 / (4 m_i) + 2 lam**: the logistic loss has
      curvature at most 1/4 along ``a_s``, so its Hessian is below
      ``A_i^T A_i / (4 m_i)``; the regulariser's Hessian is diagonal with
      entries in ``[-lam/2, 2 lam]``.
    - **sigma2 = max_i (1/m_i) sum_{s in S_i} ||a_s||^2 / batch**: a one-sample
      gradient's logistic part is ``-y_s a_s sigmoid(-y_s a_s^T x)``, of norm at
      most ``||a_s||``; the variance of a mean of ``batch`` independent draws
      is at most ``E||g_s||^2 / batch`` (the regulariser is exact).
    - **zeta2 = (1/n) sum_i (mean_{s in S_i} ||a_s||)^2** (0 when n = 1): the regulariser is
      common to all nodes; ``(1/n) sum ||g_i - g||^2 <= (1/n) sum ||g_i||^2``
      for the logistic parts ``g_i``, and ``||g_i|| <= mean_s ||a_s||``.
    - **f_lower = 0**: both terms are non-negative.

    Examples
    --------
    >>> p = NonconvexLogistic(n=4, d=5, samples=400, seed=0)
    >>> p.grad(np.zeros((4, 5)), np.random.default_rng(0)).shape
    (4, 5)
    """

    name = "NonconvexLogistic"

    def __init__(
        self,
        n: int,
        d: int,
        *,
        samples: int | None = None,
        batch: int = 8,
        lam: float = 0.1,
        split: str = "label",
        dirichlet_alpha: float = 0.5,
        seed: int = 0,
    ) -> None:
        self.n_nodes = check_int("n", n, min_value=1)
        self.dim = check_int("d", d, min_value=1)
        samples = 50 * self.n_nodes if samples is None else samples
        self.samples = check_int("samples", samples, min_value=self.n_nodes)
        self.batch = check_int("batch", batch, min_value=1)
        self.lam = check_float("lam", lam, low=0.0)
        self.split = check_choice("split", split, ("label", "dirichlet"))
        self.dirichlet_alpha = check_float("dirichlet_alpha", dirichlet_alpha, low=0.0, low_open=True)
        rng = np.random.default_rng(check_int("seed", seed, min_value=0))
        feats = rng.standard_normal((self.samples, self.dim)) / math.sqrt(self.dim)
        teacher = rng.standard_normal(self.dim)
        logits = feats @ teacher * math.sqrt(self.dim)
        labels = np.where(rng.random(self.samples) < 1 / (1 + np.exp(-logits)), 1.0, -1.0)
        owner = self._split(rng, labels)
        order = np.argsort(owner, kind="stable")
        self.features = feats[order]
        self.labels = labels[order]
        counts = np.bincount(owner, minlength=self.n_nodes)
        self.offsets = np.concatenate([[0], np.cumsum(counts)])
        self.counts = counts
        for arr in (self.features, self.labels, self.offsets, self.counts):
            arr.setflags(write=False)
        # certified constants
        norms2 = np.sum(self.features**2, axis=1)
        norms = np.sqrt(norms2)
        Lloc, s2, z2 = 0.0, 0.0, 0.0
        for i in range(self.n_nodes):  # set-up only, not a hot path
            a, b = self.offsets[i], self.offsets[i + 1]
            Ai = self.features[a:b]
            Lloc = max(Lloc, np.linalg.norm(Ai, 2) ** 2 / (4 * (b - a)))
            s2 = max(s2, norms2[a:b].mean() / self.batch)
            z2 += norms[a:b].mean() ** 2 / self.n_nodes
        self.L = float(Lloc + 2 * self.lam)
        self.sigma2 = float(s2)
        self.zeta2 = float(z2) if self.n_nodes > 1 else 0.0
        self.f_lower = 0.0
        self.f_star = None  # not separable: no certified minimum (f_lower is used)
        self._node_of = np.repeat(np.arange(self.n_nodes), counts)

    def _split(self, rng, labels):
        n, m = self.n_nodes, self.samples
        if self.split == "label":
            # sort by label, deal contiguous equal-size chunks: non-IID by class
            order = np.argsort(labels, kind="stable")
            owner = np.empty(m, dtype=np.int64)
            owner[order] = np.arange(m) * n // m
            return owner
        owner = np.empty(m, dtype=np.int64)
        for cls in (-1.0, 1.0):
            idx = np.flatnonzero(labels == cls)
            rng.shuffle(idx)
            props = rng.dirichlet(np.full(n, self.dirichlet_alpha))
            cuts = (np.cumsum(props)[:-1] * len(idx)).astype(int)
            for i, part in enumerate(np.split(idx, cuts)):
                owner[part] = i
        # every node needs data: give empty nodes one sample from the largest
        counts = np.bincount(owner, minlength=n)
        for i in np.flatnonzero(counts == 0):
            big = int(np.argmax(np.bincount(owner, minlength=n)))
            owner[np.flatnonzero(owner == big)[0]] = i
        return owner

    def _reg_grad(self, x):
        return self.lam * 2 * x / (1 + x**2) ** 2

    def _loss_grad(self, feats, labels, x):
        # feats (..., m, d), labels (..., m), x (..., d) -> mean gradient (..., d)
        margin = labels * np.einsum("...md,...d->...m", feats, x)
        coef = -labels * expit(-margin)  # 1 / (1 + e^margin), without overflow
        return np.einsum("...m,...md->...d", coef, feats) / feats.shape[-2]

    def local_grad(self, z: ArrayLike) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        out = np.empty_like(z)
        for i in range(self.n_nodes):  # exact per-node gradients: tests and set-up only
            a, b = self.offsets[i], self.offsets[i + 1]
            out[..., i, :] = self._loss_grad(self.features[a:b], self.labels[a:b], z[..., i, :])
        return out + self._reg_grad(z)

    def grad(self, z: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        lead = z.shape[:-2]
        u = rng.random(lead + (self.n_nodes, self.batch))
        idx = self.offsets[:-1, None] + (u * self.counts[:, None]).astype(np.int64)
        feats = self.features[idx]  # (..., n, batch, d)
        labels = self.labels[idx]
        return self._loss_grad(feats, labels, z) + self._reg_grad(z)

    def full_grad(self, x: ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        # f = (1/n) sum_i mean over S_i: weight each sample by 1 / (n m_i)
        wts = 1.0 / (self.n_nodes * self.counts[self._node_of])
        margin = self.labels * (x @ self.features.T)
        coef = -self.labels * wts * expit(-margin)
        return coef @ self.features + self._reg_grad(x)

    def value(self, x: ArrayLike) -> np.ndarray | float:
        x = np.asarray(x, dtype=float)
        wts = 1.0 / (self.n_nodes * self.counts[self._node_of])
        margin = self.labels * (x @ self.features.T)
        return np.logaddexp(0.0, -margin) @ wts + self.lam * np.sum(x**2 / (1 + x**2), axis=-1)


def check_problem(problem: Any) -> ProblemProtocol:
    """Validate that an object follows the Problem protocol; return it.

    Raises TypeError naming the first missing attribute, ValueError for a bad
    constant.
    """
    for attr in ("n_nodes", "dim", "L", "sigma2", "zeta2", "f_lower", "grad", "full_grad", "value"):
        if not hasattr(problem, attr):
            raise TypeError(f"problem must follow the Problem protocol: missing attribute {attr!r}")
    check_int("problem.n_nodes", problem.n_nodes, min_value=1)
    check_int("problem.dim", problem.dim, min_value=1)
    check_float("problem.L", problem.L, low=0.0)
    check_float("problem.sigma2", problem.sigma2, low=0.0)
    check_float("problem.zeta2", problem.zeta2, low=0.0)
    check_float("problem.f_lower", problem.f_lower)
    return problem


def replica_grads(
    problem: ProblemProtocol,
) -> Callable[[np.ndarray, Sequence[np.random.Generator], np.ndarray], np.ndarray] | None:
    """The problem's stacked ``grad_replicas(Z, rngs, out)``, or None where it must not be used.

    ``grad_replicas`` is the optional part of the Problem protocol (see the module
    docstring). It is looked up on the class (a wrapper that forwards attributes
    with ``__getattr__`` does not pass it on) and used only where the class that
    defines it also defines the ``grad`` in effect and no instance attribute
    replaces ``grad``: a subclass or a wrapper that changes the gradient keeps
    the per-replica calls.

    Examples
    --------
    >>> replica_grads(QuadraticCosine(4, 3)) is not None
    True
    >>> class Noisier(QuadraticCosine):
    ...     def grad(self, z, rng):
    ...         return super().grad(z, rng) + 1.0
    >>> replica_grads(Noisier(4, 3)) is None
    True
    """
    cls = type(problem)
    if getattr(cls, "grad_replicas", None) is None or "grad" in getattr(problem, "__dict__", {}):
        return None

    def owner(name):
        return next((c for c in cls.__mro__ if name in vars(c)), None)

    if owner("grad_replicas") is not owner("grad"):
        return None
    return problem.grad_replicas


PROBLEM_NAMES = ("quadratic-cosine", "nonconvex-logistic", "double-well")


def by_name(
    name: str, n: int, d: int, *, seed: int = 0, **kwargs: Any
) -> QuadraticCosine | NonconvexLogistic | DoubleWell:
    """Build a built-in problem from its kebab-case name.

    Examples
    --------
    >>> by_name("double-well", 4, 3).name
    'DoubleWell'
    """
    check_choice("problem", name, PROBLEM_NAMES)
    cls = {"quadratic-cosine": QuadraticCosine, "nonconvex-logistic": NonconvexLogistic, "double-well": DoubleWell}[
        name
    ]
    return cls(n, d, seed=seed, **kwargs)


def check_constants(
    problem: Any,
    points: ArrayLike | None = None,
    *,
    n_points: int = 32,
    samples: int = 1024,
    noise_points: int = 4,
    power_steps: int = 8,
    descent_steps: int = 32,
    seed: int = 0,
    confidence: float = 0.99,
) -> ConstantsCheck:
    """Refute a problem's declared L, sigma2, zeta2 or f_lower from what the problem itself shows.

    Each estimate is a lower bound of the true constant (an upper bound of
    ``inf f`` for ``f_lower``) from sampled gradients and values; a declared
    value beyond it is refuted. Nothing can confirm a declared value.

    Parameters
    ----------
    problem : Problem protocol
        Checked with :func:`check_problem` first. ``local_grad`` is used when
        present (per-node L, exact sigma2 deviations and zeta2).
    points : array_like, shape (..., d), optional
        Base points (e.g. points a run visits); at most ``n_points`` of them,
        evenly spread over the given order. Default: the origin.
    n_points : int
        Random points drawn around the base points, at the coordinate scales
        :data:`sgpverify.constants_check.SCALES` (>= 1).
    samples, noise_points : int
        Stochastic gradients drawn per node (>= 2) at each of ``noise_points``
        points (evenly spread over all points).
    power_steps, descent_steps : int
        Power-iteration steps (finite-difference Hessian-vector products) and
        backtracking gradient-descent steps (for ``f_lower``) from each point.
    seed : int
        Every draw comes from it: same seed, same bits.
    confidence : float
        In (0, 1): each statistical refutation (sigma2, a stochastic zeta2) is
        wrong with probability at most ``1 - confidence``.

    Returns
    -------
    ConstantsCheck
        One :class:`ConstantEstimate` per constant; ``passed`` when none is refuted.

    Notes
    -----
    The estimates, why each is a lower bound (round-off allowed at the eps of
    the problem's own dtype), the confidence rule and the heavy-tail test are
    in docs/theory.md, "Testing the declared constants".

    Examples
    --------
    >>> p = QuadraticCosine(16, 10)
    >>> check_constants(p).passed
    True
    >>> class Smoother:  # declares L four times too small, forwards the rest
    ...     def __init__(self, p):
    ...         self.p, self.L = p, p.L / 4
    ...     def __getattr__(self, name):
    ...         return getattr(self.p, name)
    >>> res = check_constants(Smoother(p))
    >>> res.refuted
    ('L',)
    >>> print(res.L.detail.split(" (")[0])
    declared L = 0.375 refuted: the gradients show L >= 1.456
    """
    check_problem(problem)
    return run_constants_check(
        problem,
        points,
        n_points=n_points,
        samples=samples,
        noise_points=noise_points,
        power_steps=power_steps,
        descent_steps=descent_steps,
        seed=seed,
        confidence=confidence,
    )
