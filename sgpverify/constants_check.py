"""Sampled lower bounds that can refute a problem's declared constants.

The machinery of :func:`sgpverify.problems.check_constants` (call that: it
checks the Problem protocol first). Every estimate is what the problem itself
shows a constant is at least (at most, for ``f_lower``), so a declared value
beyond it is refuted; nothing here can confirm a declared value.

- **L**: ``||grad f(x) - grad f(y)|| / ||x - y||`` over sampled pairs, from
  ``full_grad`` (f is L-smooth when every f_i is) and, when the problem has
  ``local_grad``, per node (stronger). The pairs: every two sampled points, and
  close pairs ``x +- h v`` at each point with ``v`` found by power iteration on
  finite-difference Hessian-vector products (the top curvature direction).
  Each ratio is lowered by a round-off allowance before the maximum.
- **sigma2**: the largest mean over nodes (and points) of ``||g - grad f_i(x)||^2``,
  as a simultaneous lower confidence bound; without ``local_grad``, the unbiased
  sample variance. A heavy-tail test (Hill's estimator of the tail index of the
  squared deviations) tells an infinite variance apart.
- **zeta2**: ``(1/n) sum_i ||grad f_i(x) - grad f(x)||^2`` at the points, exact
  with ``local_grad``; otherwise an unbiased U-statistic over independent
  stochastic gradients (the noise's share cancels) with a lower confidence bound.
- **f_lower**: the lowest ``value`` seen at the points and along a short
  gradient descent from each.
- **bias** (declared 0: unbiased draws): a lower confidence bound of the draws' mean
  offset from ``full_grad`` or ``local_grad``, beyond round-off (:mod:`sgpverify.unbiased`).

The estimates, the confidence rule and the validation of the heavy-tail test
are in docs/theory.md, "Testing the declared constants".
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.stats

from .serialize import jsonable
from .tails import (
    RESAMPLE,
    SETTLE_SHARE,
    TAIL_FRACTION,
    atoms_in_tail,
    hill_tail_index,
)
from .tails import tail_test as _tail_test
from .unbiased import describe_offset, draws_offset, dtype_eps, roundoff_allowance
from .validation import check_float, check_int, rng_for

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "ConstantEstimate",
    "ConstantsCheck",
    "run_constants_check",
    "hill_tail_index",
    "atoms_in_tail",
    "SCALES",
    "ROUNDOFF",
    "TAIL_FRACTION",
    "MAX_PAIRS",
]

#: Coordinate scales (times ``max(1, rms of the base points)``) of the random points drawn around the base points.
SCALES = (0.01, 0.1, 1.0, 10.0)
#: Round-off model: every computed gradient component (value) is within ``ROUNDOFF * eps`` times its scale (a
#: few flops per term, each bounded by the gradient size or the curvature times the coordinate size).
ROUNDOFF = 16
#: Most pairs of sampled points compared (beyond it, a seeded random subset).
MAX_PAIRS = 4096
#: Floats per chunk of pairwise differences and of stochastic gradients (memory bound).
_CHUNK = 1 << 21


@dataclasses.dataclass(frozen=True)
class ConstantEstimate:
    """One declared constant against what the problem shows.

    Attributes
    ----------
    name : {"L", "sigma2", "zeta2", "f_lower"}
    declared : float
        The problem's declared value.
    estimate : float
        For ``L``, ``sigma2``, ``zeta2``: a lower bound of the true constant
        (exact up to the round-off allowance already subtracted, or a lower
        confidence bound; ``inf`` where the variance does not exist). For
        ``f_lower``: an upper bound of ``inf f`` (the lowest value seen, plus
        the allowance).
    refuted : bool
        ``estimate > declared`` (``estimate < declared`` for ``f_lower``).
    method : str
        How the estimate was made (e.g. ``"local_grad pairs"``).
    tolerance : float
        The round-off allowance applied to the deciding pair, term or value.
    detail : str
        One line naming the constant, the declared value and the estimate.
    """

    name: str
    declared: float
    estimate: float
    refuted: bool
    method: str
    tolerance: float
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (``inf`` becomes None)."""
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def __str__(self) -> str:
        return self.detail


@dataclasses.dataclass(frozen=True)
class ConstantsCheck:
    """The declared constants of a problem against sampled lower bounds.

    Attributes
    ----------
    L, sigma2, zeta2, f_lower : ConstantEstimate
    bias : ConstantEstimate
        The draws' offset from the exact gradient (declared 0; not tested without a noise variance).
    infinite_variance : bool
        The heavy-tail test found a squared deviation with tail index below 1
        (the noise variance does not exist; ``sigma2`` is then refuted).
    tail_index, tail_index_upper : float or None
        The smallest Hill estimate of the tail index of ``||g - grad f_i||^2``
        over the tests run, and its upper confidence bound (None when no test
        had enough data).
    points : int
        Points evaluated (base points and random points around them).
    pairs : int
        Pairs compared for ``L`` (per node when ``exact_local_grad``).
    samples, noise_points : int
        Stochastic gradients drawn per node at each of ``noise_points`` points.
    exact_local_grad : bool
        Whether the problem's ``local_grad`` was used.
    confidence : float
        Each refutation of ``sigma2`` and of a stochastic ``zeta2`` is wrong with
        probability at most ``1 - confidence``; ``L`` and an exact ``zeta2`` or
        ``f_lower`` are exact up to round-off.
    seed : int
    """

    L: ConstantEstimate
    sigma2: ConstantEstimate
    zeta2: ConstantEstimate
    f_lower: ConstantEstimate
    bias: ConstantEstimate
    infinite_variance: bool
    tail_index: float | None
    tail_index_upper: float | None
    points: int
    pairs: int
    samples: int
    noise_points: int
    exact_local_grad: bool
    confidence: float
    seed: int

    @property
    def estimates(self) -> tuple[ConstantEstimate, ...]:
        """The five entries, in the order L, sigma2, zeta2, f_lower, bias."""
        return (self.L, self.sigma2, self.zeta2, self.f_lower, self.bias)

    @property
    def refuted(self) -> tuple[str, ...]:
        """Names of the refuted constants."""
        return tuple(e.name for e in self.estimates if e.refuted)

    @property
    def passed(self) -> bool:
        """True when no declared constant is refuted."""
        return not self.refuted

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field, with ``passed`` and ``refuted``."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.to_dict() if isinstance(v, ConstantEstimate) else jsonable(v)
        out["passed"] = self.passed
        out["refuted"] = list(self.refuted)
        return out

    def __str__(self) -> str:
        head = "pass" if self.passed else f"refuted: {', '.join(self.refuted)}"
        lines = [f"declared constants: {head}"]
        lines += [f"  {e.name}: {e.detail}" for e in self.estimates]
        return "\n".join(lines)


def _g(v: float) -> str:
    return "inf" if v == math.inf else f"{v:.4g}"


def _norm(a: np.ndarray) -> np.ndarray:
    return np.sqrt(np.sum(a * a, axis=-1))


def _amax(a: np.ndarray) -> np.ndarray:
    return np.max(np.abs(a), axis=-1)


def _base_points(points, d, cap):
    if points is None:
        return np.zeros((1, d))
    try:
        arr = np.asarray(points, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"points must be an array of numbers shaped (..., d), got {type(points).__name__}") from None
    if arr.ndim < 1 or arr.shape[-1] != d or arr.size == 0:
        raise ValueError(f"points must be an array shaped (..., d) with d = problem.dim = {d}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"points must be finite, got {int(np.sum(~np.isfinite(arr)))} non-finite entries")
    arr = arr.reshape(-1, d)
    if len(arr) > cap:  # evenly spread over the given order (a run's course)
        arr = arr[np.unique(np.linspace(0, len(arr) - 1, cap).round().astype(int))]
    return arr


def _sample_points(base, n_points, rng):
    """The base points and ``n_points`` random points around them, over the scales."""
    m, d = base.shape
    unit = max(1.0, float(np.sqrt(np.mean(base**2))))
    j = np.arange(n_points)
    scale = unit * np.asarray(SCALES)[j % len(SCALES)]
    anchor = base[(j // len(SCALES) + j) % m]  # every anchor meets every scale as j grows
    return np.concatenate([base, anchor + scale[:, None] * rng.standard_normal((n_points, d))])


def _local_grad_of(problem, x):
    """The problem's ``local_grad``, or None where it is missing or raises NotImplementedError."""
    fn = getattr(problem, "local_grad", None)
    if fn is None:
        return None
    try:
        fn(np.broadcast_to(x, (problem.n_nodes, problem.dim)).copy())
    except NotImplementedError:
        return None
    return fn


class _Pairs:
    """Ratios ``||g(x) - g(y)|| / ||x - y||`` of pairs, per unit (node), with what their round-off needs."""

    def __init__(self, units):
        self.parts, self.units = [], units

    def add(self, dg, dx, gscale, xscale, close, eps):
        # dg (M, u, d) gradient differences, dx (M, u, d) or broadcastable; scales (M, u); eps: the
        # machine epsilon of the gradients as the problem computed them
        ndx = np.broadcast_to(_norm(dx), gscale.shape)
        self.parts.append((_norm(dg), ndx, gscale, np.broadcast_to(xscale, gscale.shape), close, eps))

    def best(self, d):
        """(bound, unit, close, tolerance, count): the largest round-off-lowered ratio."""
        ndg, ndx, gs, xs = (np.concatenate([p[i].ravel() for p in self.parts]) for i in range(4))
        close = np.concatenate([np.full(p[0].size, p[4]) for p in self.parts])
        eps = np.concatenate([np.full(p[0].size, p[5]) for p in self.parts])
        units = np.concatenate([np.broadcast_to(np.arange(p[0].shape[-1]), p[0].shape).ravel() for p in self.parts])
        ok = (ndx > 0) & np.isfinite(ndg) & np.isfinite(gs)  # a pair with an overflowed gradient shows nothing
        raw = np.where(ok, ndg / np.where(ok, ndx, 1.0), 0.0)
        lraw = float(np.max(raw)) if raw.size else 0.0
        err = roundoff_allowance(ROUNDOFF, eps, d, gs + lraw * xs)  # |error of ||g(x) - g(y)|||
        bound = np.where(ok, np.maximum(ndg - err, 0.0) / np.where(ok, ndx * (1 + (d + 2) * eps), 1.0), 0.0)
        i = int(np.argmax(bound))
        tol = float(raw[i] - bound[i])
        self.skipped = int(ok.size - ok.sum() - np.sum(ndx == 0))
        return float(bound[i]), int(units[i]), bool(close[i]), tol, int(ok.sum()) // self.units


def _lipschitz(gfun, X, units, steps, rng, max_pairs, terms=0.0):
    """Lower bound of the Lipschitz constant of ``gfun`` (Z (..., u, d) -> (..., u, d)) from pairs.

    Close pairs ``x +- h v`` at every point, ``v`` by power iteration on
    finite-difference Hessian-vector products (each iterate is itself a pair),
    and far pairs between the points. ``terms`` (scalar or (P,)) is the size of
    the terms summed into a gradient beyond the gradient itself (the nodes'
    gradients, for f's), added to the round-off scale. Returns (bound, unit,
    close, tol, pairs, G0, skipped, eps) with G0 the gradients at the points and eps the machine
    epsilon of the coarsest dtype ``gfun`` returned (float32 gradients round at 1e-7: the close
    pairs' step and every round-off allowance follow it).
    """
    P, d = X.shape
    terms = np.broadcast_to(np.asarray(terms, dtype=float), (P,))[:, None]
    pairs = _Pairs(units)
    Z = np.ascontiguousarray(np.broadcast_to(X[:, None, :], (P, units, d)))
    raw = gfun(Z)
    eps0 = dtype_eps(raw)  # float64's at least
    G0 = np.asarray(raw, dtype=float)
    V = rng.standard_normal((P, units, d))
    V /= np.maximum(_norm(V), np.finfo(float).tiny)[..., None]
    h = (eps0 ** (1 / 3) * np.maximum(1.0, _amax(X)))[:, None, None]
    for _ in range(steps):
        Yp, Ym = Z + h * V, Z - h * V
        raw = gfun(np.concatenate([Yp, Ym]))
        eps = max(eps0, dtype_eps(raw))
        G = np.asarray(raw, dtype=float)
        dg = G[:P] - G[P:]
        gs = np.maximum(_amax(G[:P]), _amax(G[P:])) + terms
        pairs.add(dg, Yp - Ym, gs, np.maximum(_amax(Yp), _amax(Ym)), True, eps)
        ndg = _norm(dg)[..., None]
        V = np.where(ndg > 0, dg / np.where(ndg > 0, ndg, 1.0), V)
    first, second = np.triu_indices(P, 1)
    if len(first) > max_pairs:
        keep = np.sort(rng.choice(len(first), size=max_pairs, replace=False))
        first, second = first[keep], second[keep]
    step = max(1, _CHUNK // (units * d))
    gscale, xscale = _amax(G0) + terms, _amax(X)
    for s in range(0, len(first), step):
        i, j = first[s : s + step], second[s : s + step]
        pairs.add(
            G0[i] - G0[j],
            (X[i] - X[j])[:, None, :],
            np.maximum(gscale[i], gscale[j]),
            np.maximum(xscale[i], xscale[j])[:, None],
            False,
            eps0,
        )
    bound, unit, close, tol, count = pairs.best(d)
    return bound, unit, close, tol, count, G0, pairs.skipped, eps0


def _descend(problem, X, steps, lip):
    """Lowest value seen at the points and along backtracking gradient descent from each.

    Returns (v_min, scale, evaluations, eps): ``scale`` is the largest |value| on
    the path that found ``v_min`` (the size of the terms summed, for round-off), ``eps`` the machine
    epsilon of the coarsest dtype the values came in.
    """
    x = X.copy()
    raw = problem.value(x)
    eps = dtype_eps(raw)
    fx = np.asarray(raw, dtype=float).reshape(len(x))
    gx = np.asarray(problem.full_grad(x), dtype=float)
    best = np.where(np.isnan(fx), np.inf, fx)
    scale = np.where(np.isfinite(fx), np.abs(fx), 0.0)
    t = np.full(len(x), 1.0 / lip if lip > 0 else max(1.0, float(np.sqrt(np.mean(X**2)))))
    evals = len(x)
    for _ in range(steps):
        y = x - t[:, None] * gx
        raw = problem.value(y)
        eps = max(eps, dtype_eps(raw))
        fy = np.asarray(raw, dtype=float).reshape(len(x))
        gy = np.asarray(problem.full_grad(y), dtype=float)
        evals += len(x)
        seen = ~np.isnan(fy)
        best = np.where(seen, np.minimum(best, fy), best)
        scale = np.where(np.isfinite(fy), np.maximum(scale, np.abs(fy)), scale)
        ok = np.isfinite(fy) & (fy <= fx - 0.5 * t * np.sum(gx * gx, axis=-1))
        x[ok], fx[ok], gx[ok] = y[ok], fy[ok], gy[ok]
        t = np.where(ok, t, t / 2)
    i = int(np.argmin(best))
    return float(best[i]), float(scale[i]), evals, eps


def _lower_mean(D, alpha):
    """Simultaneous lower confidence bound (level 1 - alpha) of the largest mean of D (S, m, n).

    Means per (point, node), per node over the points, and over everything:
    Student t bounds, Bonferroni over all ``m n + n + 1`` of them. Returns
    (bound, label) of the largest.
    """
    S, m, n = D.shape
    mean = D.mean(axis=0)  # (m, n)
    var = D.var(axis=0, ddof=1) / S  # squared standard errors
    K = m * n + n + 1
    a = alpha / K
    cands = []
    q = scipy.stats.t.ppf(1 - a, S - 1)
    lb = mean - q * np.sqrt(var)
    lb = np.where(np.isfinite(lb), lb, -np.inf)  # a group with an overflowed draw shows nothing
    p, i = np.unravel_index(int(np.argmax(lb)), lb.shape)
    cands.append((float(lb[p, i]), f"node {i} at point {p}"))
    if m > 1:
        q = scipy.stats.t.ppf(1 - a, m * (S - 1))
        lb = mean.mean(axis=0) - q * np.sqrt(var.sum(axis=0)) / m
        lb = np.where(np.isfinite(lb), lb, -np.inf)
        i = int(np.argmax(lb))
        cands.append((float(lb[i]), f"node {i}, mean over the {m} points"))
    if n > 1:
        q = scipy.stats.t.ppf(1 - a, m * n * (S - 1))
        cands.append((float(mean.mean() - q * math.sqrt(var.sum()) / (m * n)), "mean over every node and point"))
    return max((v if math.isfinite(v) else -math.inf, label) for v, label in cands)


def _chunks(problem, x, samples, rng):
    """``samples`` stochastic gradients of every node at x, as the problem returns them, in chunks
    (s, n, d) of at most ``_CHUNK`` numbers each."""
    n, d = problem.n_nodes, problem.dim
    step = max(1, _CHUNK // (n * d))
    for s in range(0, samples, step):
        yield problem.grad(np.ascontiguousarray(np.broadcast_to(x, (min(step, samples - s), n, d))), rng)


def _draws(problem, x, samples, rng):
    """``samples`` stochastic gradients of every node at x: (samples, n, d), in chunks of bounded memory,
    and the machine epsilon of their dtype as the problem returned them."""
    raw = list(_chunks(problem, x, samples, rng))
    parts = [np.asarray(r, dtype=float) for r in raw]
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)), dtype_eps(*raw)


def _fresh_deviations(problem, points, refs, samples, rngs):
    """Squared deviations (samples, m, n) of fresh stochastic gradients at each of the m ``points`` from
    ``refs[k]`` (n, d) (the exact local gradients, or the first sample's mean), chunk by chunk (the
    draws themselves are not kept): the heavy-tail test's larger sample."""
    out = np.empty((samples, len(points), problem.n_nodes))
    for k, (x, ref, rng) in enumerate(zip(points, refs, rngs)):
        s = 0
        for raw in _chunks(problem, x, samples, rng):
            dev = np.asarray(raw, dtype=float) - ref
            out[s : s + len(dev), k, :] = np.sum(dev * dev, axis=-1)
            s += len(dev)
    return out


def _zeta_u(G, alpha, e):
    """Lower confidence bound of (1/n) sum_i ||mu_i - mean mu||^2 from draws G (S, n, d), its square root
    lowered by the round-off allowance ``e`` (noise-free draws attain the spread: se 0).

    The U-statistic ``mean_{s != t} (1/n) <c^s, c^t>`` of the node-centred draws
    ``c^s = G^s - mean_i G^s_i`` is unbiased whatever the noise (independent
    draws); its standard error is ``2 sd(h_s) / sqrt(S)`` with
    ``h_s = (1/n) <c^s, C - c^s> / (S - 1)``, ``C = sum_s c^s``.
    """
    S, n, _ = G.shape
    c = G - G.mean(axis=1, keepdims=True)
    C = c.sum(axis=0)
    h = (np.einsum("snd,nd->s", c, C) - np.einsum("snd,snd->s", c, c)) / (n * (S - 1))
    u = float(h.mean())
    se = 2.0 * float(h.std(ddof=1)) / math.sqrt(S)
    lo = u - float(scipy.stats.t.ppf(1 - alpha, S - 1)) * se
    return max(math.sqrt(lo) - e, 0.0) ** 2 if lo > 0 else lo


def run_constants_check(
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
    """The machinery of :func:`sgpverify.problems.check_constants` (see there; call that).

    ``problem`` must already follow the Problem protocol (``check_constants``
    checks it); every other argument is checked here, before any work.

    Examples
    --------
    >>> from sgpverify.problems import QuadraticCosine
    >>> run_constants_check(QuadraticCosine(4, 3), n_points=8, samples=64).passed
    True
    """
    n_points = check_int("n_points", n_points, min_value=1)
    samples = check_int("samples", samples, min_value=2)
    noise_points = check_int("noise_points", noise_points, min_value=1)
    power_steps = check_int("power_steps", power_steps, min_value=1)
    descent_steps = check_int("descent_steps", descent_steps, min_value=0)
    seed = check_int("seed", seed, min_value=0)
    confidence = check_float("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    n, d = problem.n_nodes, problem.dim
    base = _base_points(points, d, n_points)
    alpha = 1.0 - confidence

    rng = rng_for(seed, "constants", 0)
    X = _sample_points(base, n_points, rng)
    P = len(X)
    local = _local_grad_of(problem, X[0])

    # L: from full_grad, and per node from local_grad
    def fgrad(Z):
        return np.asarray(problem.full_grad(Z[..., 0, :]))[..., None, :]  # in the problem's dtype

    lb = _lipschitz(local, X, n, power_steps, rng, MAX_PAIRS) if local is not None else None
    # f's gradient sums the nodes' gradients: with local_grad their size is known; otherwise an
    # honest zeta2 bounds their distance from grad f (max_i ||grad f_i - grad f|| <= sqrt(n zeta2))
    terms = np.max(_amax(lb[5]), axis=-1) if lb is not None else math.sqrt(n * float(problem.zeta2))
    fb = _lipschitz(fgrad, X, 1, power_steps, rng, MAX_PAIRS, terms)
    L = _entry_L(problem.L, fb, lb)

    # sigma2 (and zeta2 without local_grad): stochastic gradients at the noise points
    q_idx = np.unique(np.linspace(0, P - 1, min(noise_points, P)).round().astype(int))
    m = len(q_idx)
    D = np.empty((samples, m, n))  # squared deviations, as computed
    Dlow = np.empty((samples, m, n))  # lowered by their round-off allowance
    zeta_lbs, offsets, refs = [], [], []
    for k, q in enumerate(q_idx):
        G, eps_g = _draws(problem, X[q], samples, rng_for(seed, "constants", 1, int(q)))
        if lb is not None:
            ref, corr, eps_g = lb[5][q], 1.0, max(eps_g, lb[7])  # the draws' and local_grad's rounding
        else:
            ref, corr = G.mean(axis=0), samples / (samples - 1)
            zeta_lbs.append(_zeta_u(G, alpha / m, roundoff_allowance(ROUNDOFF, eps_g, d, float(np.max(_amax(G))))))
        offsets.append(draws_offset(problem, X[q], G, None if lb is None else ref, eps_g, alpha / m, ROUNDOFF))
        refs.append(ref)
        dev = G - ref
        D[:, k, :] = corr * np.sum(dev * dev, axis=-1)
        e = roundoff_allowance(ROUNDOFF, eps_g, d, np.maximum(_amax(G).max(axis=0), _amax(np.asarray(ref))))
        Dlow[:, k, :] = D[:, k, :] - 2 * e * np.sqrt(D[:, k, :])  # the true term is at least this
    rngs = [rng_for(seed, "constants", 3, int(q)) for q in q_idx]
    fresh = lambda: _fresh_deviations(problem, X[q_idx], refs, RESAMPLE * samples, rngs)  # noqa: E731
    tail = _tail_test(D, alpha / 2, fresh)  # half of sigma2's error budget; the mean bounds get the other half
    sigma2 = _entry_sigma2(problem.sigma2, D, Dlow, alpha, tail, lb is not None, samples)
    bias = _entry_bias(offsets, bool(tail is not None and tail[0]), lb is not None, samples, confidence)

    if lb is not None:
        zeta2 = _entry_zeta_exact(problem.zeta2, lb[5], d, lb[7])
    else:
        zeta2 = _entry_zeta_u(
            problem.zeta2, max([v for v in zeta_lbs if math.isfinite(v)], default=0.0), m, samples, confidence
        )

    v_min, vscale, evals, eps_v = _descend(problem, X, descent_steps, fb[0])
    f_lower = _entry_f_lower(problem.f_lower, v_min, vscale, n, d, evals, P, descent_steps, eps_v)

    return ConstantsCheck(
        L=L,
        sigma2=sigma2,
        zeta2=zeta2,
        f_lower=f_lower,
        bias=bias,
        infinite_variance=bool(tail is not None and tail[0]),
        tail_index=None if tail is None else tail[1],
        tail_index_upper=None if tail is None else tail[2],
        points=P,
        pairs=fb[4] if lb is None else lb[4],
        samples=samples,
        noise_points=m,
        exact_local_grad=lb is not None,
        confidence=confidence,
        seed=seed,
    )


def _entry_bias(offsets, infinite, exact, S, confidence):
    low, est, tol = max(offsets)
    refuted, method, detail = describe_offset(low, est, tol, len(offsets), S, confidence, exact, infinite)
    return ConstantEstimate("bias", 0.0, low, refuted, method, tol, detail)


def _verdict(name, declared, refuted):
    word = "refuted" if refuted else "not refuted"
    return f"declared {name} = {_g(declared)} {word}"


def _entry_L(declared, fb, lb):
    declared = float(declared)
    best, what = fb, "||grad f(x) - grad f(y)||"
    if lb is not None and lb[0] >= fb[0]:
        best, what = lb, "||grad f_i(x) - grad f_i(y)||"
    bound, unit, close, tol, count = best[:5]
    where = (f", node {unit}" if best is lb else "") + (", a close pair" if close else ", a far pair")
    per = " at every node" if best is lb else ""
    refuted = bound > declared
    share = "" if refuted or declared <= 0 else f"{bound / declared:.0%} of the declared; "
    detail = (
        f"{_verdict('L', declared, refuted)}: the gradients show L >= {_g(bound)} "
        f"({share}max over {count} pairs{per} of {what} / ||x - y||{where})"
    )
    skipped = fb[6] + (0 if lb is None else lb[6])
    if skipped:
        detail += f"; {skipped} pairs with non-finite gradients skipped"
    if lb is None:
        detail += "; no local_grad: f's gradient only"
    method = "local_grad pairs" if lb is not None else "full_grad pairs"
    return ConstantEstimate("L", declared, bound, refuted, method, tol, detail)


def _entry_sigma2(declared, D, Dlow, alpha, tail, exact, S):
    declared = float(declared)
    _, m, n = D.shape
    lb, where = _lower_mean(Dlow, alpha / 2)
    lb = max(lb, 0.0)
    ref = "grad f_i(x) (local_grad)" if exact else "the sample mean (unbiased sample variance)"
    method = "local_grad deviations" if exact else "sample variance"
    conf = f"{1 - alpha:.4g}"
    if tail is not None and tail[0]:
        flag, index, upper, k, N, node, level, (means, size) = tail
        who = "pooled over the nodes" if node is None else f"node {node}"
        grow, sizes = ", ".join(_g(v) for v in means), ", ".join(str(size >> s) for s in (2, 1, 0))
        detail = (
            f"declared sigma2 = {_g(declared)} refuted: the noise variance does not exist: the tail index of "
            f"||g - {'grad f_i' if exact else 'mean g'}||^2 is {index:.3g} < 1 (Hill, top {k} of {N}, {who}; "
            f"upper {level:.4g} bound {upper:.3g}), so the sample variance does not settle as the sample grows "
            f"(its means, scaled by the median, on a fresh sample {RESAMPLE} times larger: {grow} over {sizes} "
            f"values; the largest keeps >= {SETTLE_SHARE:g} of the sum at every doubling in both samples, and the "
            f"largest values are distinct)"
        )
        return ConstantEstimate("sigma2", declared, math.inf, True, method + ", heavy-tail test", 0.0, detail)
    refuted = lb > declared
    bad = int(np.sum(~np.isfinite(D)))
    tail_txt = "" if not bad else f"; {bad} non-finite deviations ignored"
    if tail is None:
        tail_txt += "; too few positive deviations for the heavy-tail test"
    elif tail[1] is None:
        tail_txt += (
            "; heavy-tail test not applicable: the largest deviations are a few values repeated exactly (noise "
            "drawn from a finite set, as a data set's: a finite support has a finite variance)"
        )
    else:
        tail_txt += f"; heavy-tail test: tail index {tail[1]:.3g}, upper {tail[6]:.4g} bound {tail[2]:.3g}, " + (
            "not below 1"
            if tail[2] >= 1
            else "below 1 but the sample variance settles (scaled means "
            + ", ".join(_g(v) for v in tail[7][0])
            + f" over {tail[7][1] >> 2}, {tail[7][1] >> 1}, {tail[7][1]} values: a finite variance)"
        )
    detail = (
        f"{_verdict('sigma2', declared, refuted)}: the noise shows sigma2 >= {_g(lb)} ({conf} lower "
        f"confidence bound of the largest mean of ||g - {ref}||^2 over {n} nodes x {m} points, {S} draws each, "
        f"largest: {where}{tail_txt})"
    )
    return ConstantEstimate("sigma2", declared, lb, refuted, method, 0.0, detail)


def _entry_zeta_exact(declared, G0, d, eps):
    declared = float(declared)
    dev = G0 - G0.mean(axis=1, keepdims=True)  # the mean of the nodes' gradients minimises the spread
    rms = np.sqrt(np.mean(np.sum(dev * dev, axis=-1), axis=-1))  # (P,)
    e = roundoff_allowance(ROUNDOFF, eps, d, np.max(_amax(G0), axis=-1))
    low = np.maximum(rms - e, 0.0) ** 2
    low = np.where(np.isfinite(low), low, 0.0)  # an overflowed gradient shows nothing
    p = int(np.argmax(low))
    est = float(low[p])
    refuted = est > declared
    detail = (
        f"{_verdict('zeta2', declared, refuted)}: the gradients show zeta2 >= {_g(est)} (max over "
        f"{len(G0)} points of (1/n) sum_i ||grad f_i(x) - grad f(x)||^2, exact from local_grad)"
    )
    return ConstantEstimate("zeta2", declared, est, refuted, "exact (local_grad)", float(rms[p] ** 2 - est), detail)


def _entry_zeta_u(declared, lb, m, S, confidence):
    declared = float(declared)
    est = max(float(lb), 0.0)
    refuted = est > declared
    detail = (
        f"{_verdict('zeta2', declared, refuted)}: the stochastic gradients show zeta2 >= {_g(est)} "
        f"({confidence:.4g} lower confidence bound, max over {m} points of an unbiased U-statistic of "
        f"(1/n) sum_i ||grad f_i - grad f||^2 from {S} draws, the noise's share removed; no local_grad)"
    )
    return ConstantEstimate("zeta2", declared, est, refuted, "U-statistic (stochastic gradients)", 0.0, detail)


def _entry_f_lower(declared, v_min, vscale, n, d, evals, P, steps, eps):
    declared = float(declared)
    tol = ROUNDOFF * (n + d) * eps * max(abs(v_min) if math.isfinite(v_min) else 0.0, abs(declared), vscale)
    est = v_min + tol
    refuted = est < declared
    detail = (
        f"{_verdict('f_lower', declared, refuted)}: the lowest value seen is f = {v_min:.6g} (over "
        f"{evals} values: {P} points and {steps} steps of gradient descent from each)"
    )
    return ConstantEstimate("f_lower", declared, est, refuted, "values and gradient descent", tol, detail)
